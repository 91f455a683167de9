import type { EventStore, RecordedEvent } from '../../platform/eventstore/port';

/** Every event of the store, oldest first, in batches (positions after 0, as the projection runner reads). */
export async function* allEvents(store: EventStore, opts: { upTo?: bigint; batch?: number } = {}): AsyncIterable<RecordedEvent> {
  const size = opts.batch ?? 5000;
  let from = 0n;
  for (;;) {
    const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter((e) => e.position > from);
    if (events.length === 0) return;
    for (const e of events) {
      if (opts.upTo !== undefined && e.position > opts.upTo) return;
      yield e;
    }
    from = events[events.length - 1].position;
  }
}
