import type { Event, EventRecord } from '../event';
import { AppendResult, EventMetadata, EventStore, RecordedEvent, WrongExpectedVersion } from './port';

/** What handleCommand needs of a decider: a stream's state from its events. */
export interface Decider<State, E extends Event = Event> {
  initial: () => State;
  evolve: (state: State, event: EventRecord<E>) => State;
}

export interface Handled<R, E extends Event = Event> {
  /** Undefined when the decision produced no events (nothing was appended). */
  appended?: AppendResult;
  events: E[];
  result: R;
}

export interface Decision<R, E extends Event = Event> {
  events: E[];
  result: R;
}

/** A stream's events, typed as the events its decider folds: a stream only ever holds those (docs/ARCHITECTURE.md). */
export async function readEvents<E extends Event>(
  store: EventStore,
  stream: string,
): Promise<Array<Omit<RecordedEvent, 'type' | 'data'> & EventRecord<E>>> {
  return (await store.readStream(stream)) as unknown as Array<Omit<RecordedEvent, 'type' | 'data'> & EventRecord<E>>;
}

/** Folds one stream into its state; `head` is the global position of its last event (0n when empty). */
export async function loadState<S, E extends Event>(
  store: EventStore,
  stream: string,
  decider: Decider<S, E>,
): Promise<{ state: S; revision: bigint | null; head: bigint }> {
  const events = await store.readStream(stream);
  let state = decider.initial();
  for (const e of events) state = decider.evolve(state, e as unknown as EventRecord<E>);
  const last = events.at(-1);
  return { state, revision: last ? last.revision : null, head: last ? last.position : 0n };
}

export interface HandleOptions<R, E extends Event> {
  metadata: EventMetadata | ((decision: Decision<R, E>) => EventMetadata);
  /** A new event id (required unless `eventIds` is given). */
  newId?: () => string;
  /**
   * Ids for the events decided, one per event in order, instead of `newId()`: a write whose retry
   * (after a crash) must be recognised as the same write derives them from what it decided.
   */
  eventIds?: (decision: Decision<R, E>) => string[];
  /** How many times a conflicting append is decided again (default 5); then WrongExpectedVersion surfaces. */
  retries?: number;
  /**
   * Awaited before deciding again after a conflict (default: at once). A stream many callers write
   * at the same moment passes a jittered pause, so the losers of one round do not collide again in
   * lockstep.
   */
  beforeRetry?: (attempt: number) => Promise<void>;
}

/**
 * Load, decide, append with the exact revision that was read: a concurrent writer makes the append
 * fail, and the command is decided again on the new state (a few times, then the conflict surfaces).
 * `decide` may throw a DomainError; it returns the events and a result for the caller. It gets the
 * revision and head position it decided at, and may wait (for the projections to reach the head).
 */
export async function handleCommand<S, R = void, E extends Event = Event>(
  store: EventStore,
  stream: string,
  decider: Decider<S, E>,
  decide: (state: S, at: { revision: bigint | null; head: bigint }) => Decision<R, E> | Promise<Decision<R, E>>,
  opts: HandleOptions<R, E>,
): Promise<Handled<R, E>> {
  const retries = opts.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    const { state, revision, head } = await loadState(store, stream, decider);
    const decision = await decide(state, { revision, head });
    const { events, result } = decision;
    if (events.length === 0) return { events, result };
    const ids = opts.eventIds ? opts.eventIds(decision) : events.map(() => opts.newId!());
    if (ids.length < events.length) throw new TypeError(`${ids.length} event ids for ${events.length} events`);
    const metadata = typeof opts.metadata === 'function' ? opts.metadata(decision) : opts.metadata;
    try {
      const appended = await store.append(
        stream,
        events.map((e, i) => ({ id: ids[i], type: e.type, data: e.data, metadata })),
        { expectedRevision: revision === null ? 'no_stream' : revision },
      );
      return { appended, events, result };
    } catch (err) {
      if (err instanceof WrongExpectedVersion && attempt < retries) {
        await opts.beforeRetry?.(attempt);
        continue;
      }
      throw err;
    }
  }
}
