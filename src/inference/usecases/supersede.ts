import { WrongExpectedVersion } from '../../platform/eventstore/port';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import { decideSupersede } from '../metering';
import type { Prices } from '../metering';

/**
 * Closes, unbilled, the request of an idempotent call whose process died, before its retry runs
 * anew (the retry is the one billed). A request already closed (it did finish, or the sweeper got
 * there first) is left as it is: the append at revision 0 conflicts and nothing changes.
 */
export async function closeSuperseded(s: Services, prices: Prices, requestId: string): Promise<void> {
  const stream = streams.inference(requestId);
  const events = await s.store.readStream(stream);
  const close = decideSupersede(events, prices, s.now());
  if (!close) return;
  try {
    await s.store.append(
      stream,
      close.map((e) => ({
        id: s.newId(),
        type: e.type,
        data: e.data,
        metadata: { actor: `apikey:${e.data.keyId}`, correlationId: requestId },
      })),
      { expectedRevision: 0n },
    );
  } catch (err) {
    if (!(err instanceof WrongExpectedVersion)) throw err;
  }
}
