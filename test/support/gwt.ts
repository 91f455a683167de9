import { DomainError, DomainErrorCode } from '../../src/platform/errors';
import { type Event, type EventRecord, recorded } from '../../src/platform/event';

/**
 * given(events).when(command).then(events) | .thenNothing() | .thenFails(code, detail) — for a
 * decider whose decide is (command, state) → events. The history is folded as if the store had
 * recorded it at `at` (positions 1, 2, …), since some states keep the time of an event.
 */
/** Folds events with a decider's evolve as if the store had recorded them at `at` (positions 1, 2, …). */
export function foldWith<S, R extends EventRecord>(
  decider: { initial: () => S; evolve: (s: S, e: R) => S },
  events: Event[],
  from: S = decider.initial(),
  at = '2026-03-15T12:00:00.000Z',
): S {
  // The decider's own event type: a history of other events is the test's mistake, and evolve says so.
  return events.map((e, i) => recorded(e, at, BigInt(i + 1)) as unknown as R).reduce(decider.evolve, from);
}

/** `R`, the record the decider folds, is inferred from it (never: any decider fits when S and C are given). */
export function scenario<S, C, R extends EventRecord = never>(
  decider: { initial: () => S; evolve: (s: S, e: R) => S },
  decide: (c: C, s: S) => Event[],
  opts: { at?: string } = {},
) {
  const at = opts.at ?? '2026-03-15T12:00:00.000Z';
  return {
    given(...history: Event[]) {
      const state = foldWith(decider, history, decider.initial(), at);
      return {
        /** The state the history folds to (for checks the events alone do not show). */
        state,
        when(command: C) {
          const run = () => decide(command, state);
          return {
            then(...expected: Event[]) {
              expect(run()).toEqual(expected);
            },
            thenNothing() {
              expect(run()).toEqual([]);
            },
            thenFails(code: DomainErrorCode, detail: string | RegExp) {
              let caught: unknown;
              try {
                run();
              } catch (err) {
                caught = err;
              }
              expect(caught).toBeInstanceOf(DomainError);
              expect((caught as DomainError).code).toBe(code);
              if (typeof detail === 'string') expect((caught as DomainError).message).toBe(detail);
              else expect((caught as DomainError).message).toMatch(detail);
            },
          };
        },
      };
    },
  };
}
