import type { EventStore, RecordedEvent } from '../../platform/eventstore/port';
import { type ProgressStream, replayProgress } from './progress';

/**
 * Every event of the store, oldest first, in batches (positions after 0, as the projection runner
 * reads). With `progress` (a label), a progress bar on stderr while it replays, when stderr is a terminal.
 */
export async function* allEvents(
  store: EventStore,
  opts: { upTo?: bigint; batch?: number; progress?: string; progressStream?: ProgressStream } = {},
): AsyncIterable<RecordedEvent> {
  const size = opts.batch ?? 5000;
  const bar = opts.progress ? await replayProgress(store, opts.progress, opts.progressStream) : null;
  let from = 0n;
  try {
    for (;;) {
      const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter((e) => e.position > from);
      if (events.length === 0) return;
      for (const e of events) {
        if (opts.upTo !== undefined && e.position > opts.upTo) return;
        bar?.at(e.position);
        yield e;
      }
      from = events[events.length - 1].position;
    }
  } finally {
    bar?.stop();
  }
}
