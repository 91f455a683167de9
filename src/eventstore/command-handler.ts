import type { Event } from '../domain/event';
import { AppendResult, EventMetadata, EventStore, RecordedEvent, WrongExpectedVersion } from './port';

export interface Decider<State> {
  initial: () => State;
  evolve: (state: State, event: RecordedEvent) => State;
}

export interface Handled<R> {
  /** Undefined when the decision produced no events (nothing was appended). */
  appended?: AppendResult;
  events: Event[];
  result: R;
}

/** Folds one stream into its state. */
export async function loadState<S>(
  store: EventStore,
  stream: string,
  decider: Decider<S>,
): Promise<{ state: S; revision: bigint | null }> {
  const events = await store.readStream(stream);
  let state = decider.initial();
  for (const e of events) state = decider.evolve(state, e);
  return { state, revision: events.length ? events[events.length - 1].revision : null };
}

/**
 * Load, decide, append with the exact revision that was read: a concurrent writer makes the append
 * fail, and the command is decided again on the new state (a few times, then the conflict surfaces).
 * `decide` is pure and may throw a DomainError; it returns the events and a result for the caller.
 */
export async function handleCommand<S, R = void>(
  store: EventStore,
  stream: string,
  decider: Decider<S>,
  decide: (state: S) => { events: Event[]; result: R },
  opts: { metadata: EventMetadata; newId: () => string; retries?: number },
): Promise<Handled<R>> {
  const retries = opts.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    const { state, revision } = await loadState(store, stream, decider);
    const { events, result } = decide(state);
    if (events.length === 0) return { events, result };
    try {
      const appended = await store.append(
        stream,
        events.map((e) => ({ id: opts.newId(), type: e.type, data: e.data, metadata: opts.metadata })),
        { expectedRevision: revision === null ? 'no_stream' : revision },
      );
      return { appended, events, result };
    } catch (err) {
      if (err instanceof WrongExpectedVersion && attempt < retries) continue;
      throw err;
    }
  }
}
