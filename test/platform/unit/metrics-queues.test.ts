import { queuesOf } from '../../../src/services';
import { modules } from '../../../src/modules';

// The modules name the BullMQ queues whose depth /metrics reports: with every module, the same two
// queues, in the same order, as the list main.ts used to hold.
test('the feature modules name the auto-reload and sweeper queues for /metrics', () => {
  expect(queuesOf(modules)).toEqual(['auto-reload', 'inference-sweeper']);
});
