import { DomainError, DomainErrorCode } from '../../../src/domain/errors';
import type { EventLike } from '../../../src/domain/accounts/user';

/**
 * given(events).when(command).then(events) | .thenFails(code, detail) — for a decider whose decide
 * is (state, command) → events.
 */
export function scenario<S, C>(decider: { initial: () => S; evolve: (s: S, e: EventLike) => S }, decide: (s: S, c: C) => EventLike[]) {
  return {
    given(...history: EventLike[]) {
      const state = history.reduce(decider.evolve, decider.initial());
      return {
        when(command: C) {
          const run = () => decide(state, command);
          return {
            then(...expected: EventLike[]) {
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
