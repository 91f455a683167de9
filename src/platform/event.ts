/** A domain event before it is stored: the command handler gives it an id and metadata. */
export interface Event<Type extends string = string, Data extends Record<string, unknown> = Record<string, unknown>> {
  type: Type;
  data: Data;
}

/**
 * A stored event as every fold in the domain reads it (evolve, the ledger replay, the sweeper): the
 * event, the time the store recorded it and its global position. The store's RecordedEvent satisfies
 * it; tests build one from an Event with `recorded`.
 */
export type EventRecord<E extends { type: string; data: unknown } = { type: string; data: unknown }> = E & {
  /** ISO-8601 time the store recorded the event. */
  created: string;
  position: bigint;
};

/** An event as if the store had recorded it at `created` (position `position`): for folding events just decided. */
export const recorded = <E extends Event>(e: E, created: string, position = 0n): EventRecord<E> => ({ ...e, created, position });

export interface Command<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/** Makes a switch exhaustive: the compiler complains when a case is missing. */
export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`);
}
