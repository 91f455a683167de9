import { InferenceEngine } from '../../../src/inference/usecases/engine';
import { startInferenceServer } from './support/server';

/*
 * The engine is built inside the inference module's router, which has no shutdown of its own: its
 * close() (stopping the completion recorder's background retries) runs through services.onClose,
 * before the event store closes, so no retry appends to a closed store.
 */
describe('inference engine on shutdown', () => {
  it('closing the service closes the engine before the event store', async () => {
    const order: string[] = [];
    const realClose = InferenceEngine.prototype.close;
    const engineClose = jest.spyOn(InferenceEngine.prototype, 'close').mockImplementation(function (this: InferenceEngine) {
      order.push('engine');
      realClose.call(this);
    });
    try {
      const server = await startInferenceServer();
      const store = server.services.store;
      const storeClose = store.close.bind(store);
      store.close = async () => {
        order.push('store');
        await storeClose();
      };
      await server.close();
      expect(engineClose).toHaveBeenCalledTimes(1);
      expect(order).toEqual(['engine', 'store']);
    } finally {
      engineClose.mockRestore();
    }
  });
});
