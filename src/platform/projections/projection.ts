import type { ChainableCommander } from 'ioredis';
import type { RecordedEvent } from '../eventstore/port';

/**
 * A projection folds events into a Redis read model. `apply` only queues write commands on the
 * transaction: they commit in one MULTI with the projection's checkpoint, so a crash never applies
 * an event twice or skips one. Anything apply needs to know must be in the event (or in the
 * projection's own keys through Lua run inside the MULTI): there is no read-before-write.
 */
export interface ProjectionTx {
  readonly multi: ChainableCommander;
  /** A key inside this projection's generation that is not per workspace, e.g. key('user', id) → `tg:rm:{users}:3:user:<id>`. */
  key(...parts: string[]): string;
  /**
   * A key of one workspace inside this projection's generation, under the workspace's hash tag:
   * wsKey(wsId) → `tg:rm:balances:3:{ws:<wsId>}`, wsKey(wsId, 'key-spend', keyId) → `…{ws:<wsId>}:key-spend:<keyId>`.
   */
  wsKey(workspaceId: string, ...parts: string[]): string;
  /** A key outside any generation, shared with the api role (reservations, pub/sub channels). */
  sharedKey(...parts: string[]): string;
  /** False while rebuilding: live-only effects (pub/sub pushes) are skipped. */
  readonly live: boolean;
  /**
   * Batched writes (./batch-writes.ts), applied at the end of the projection's batch, after its
   * `multi` commands and in this order: summed HINCRBYs, each `evalEach` script once per call in
   * call order, then EXPIREATs. Cheaper than one command per event; a projection must not mix
   * them with `multi` commands on the same keys, whose order they would not keep.
   */
  hincrby(key: string, field: string, delta: string | number | bigint): void;
  expireAt(key: string, unixSeconds: number): void;
  /**
   * `lua` written for one call (KEYS and ARGV as usual, but reused between calls: not to be kept;
   * keys may also be passed in ARGV). It may call `incr(key, field, delta)`, or `room(…)` then
   * `sums(key)`: summed over the batch, one HINCRBY per field at the end; keep values in `memo`
   * for the rest of the batch's calls; and `atEnd(fn)` to run fn after the last call (batch-writes.ts).
   */
  evalEach(lua: string, keys: readonly string[], args: readonly string[]): void;
}

/** Any domain event by its name and data (each area's events union fits). */
export interface EventShape {
  type: string;
  data: unknown;
}

/**
 * The stored form of each member of `E`, kept apart (distributive), so a switch on `type` narrows
 * `data` without a cast.
 */
export type Recorded<E extends EventShape> = E extends EventShape ? RecordedEvent<E['type'], E['data']> : never;

/**
 * A projection of the events `E`. The runner calls `apply` only for an event whose type is in
 * `handles` (apply-batch.ts, runner.ts: that check is what makes the type true), so `apply` sees exactly `E`, typed. Build one with `projection()`,
 * which derives `E` from the declared types.
 */
export interface Projection<E extends EventShape = EventShape> {
  readonly name: string;
  /** Event types it applies; the checkpoint also advances over every other event. */
  readonly handles: ReadonlySet<E['type']>;
  apply(event: Recorded<E>, tx: ProjectionTx): void;
  /**
   * False for a read model that is not per workspace (its keys are shared by all workspaces):
   * with PROJECTION_PARTITIONS > 1 all its events are applied by partition 0's owner (./partitions.ts).
   */
  readonly partitioned?: boolean;
}

/**
 * A reactor turns events into side effects (enqueue a charge, say). It is never part of a rebuild
 * or replay, and runs at least once per event after the projections committed: it must be idempotent.
 * Like a projection, it is handed only the types in `handles`. With PROJECTION_PARTITIONS > 1 it
 * runs in the partition of the event's workspace (./partitions.ts): it may read that workspace's
 * read models, which are up to the event, but not another workspace's.
 */
export interface Reactor<E extends EventShape = EventShape> {
  readonly name: string;
  readonly handles: ReadonlySet<E['type']>;
  react(event: Recorded<E>): Promise<void>;
}

/** The events of the union `Events` whose type is one of `T`. */
export type Picked<Events extends EventShape, T extends Events['type']> = Extract<Events, { type: T }>;

/**
 * Declares a projection over some of `Events` (an area's events union, or several):
 *
 *   projection<BillingEvent | TokensDebited>()({ name, handles: ['DepositSucceeded', 'TokensDebited'], apply(e, tx) {…} })
 *
 * `apply` receives exactly the declared types: a `switch (e.type)` narrows `e.data`, and a type not
 * declared is a compile error in the switch.
 */
export function projection<Events extends EventShape>() {
  return <const T extends Events['type']>(def: {
    name: string;
    handles: readonly T[];
    apply(event: Recorded<Picked<Events, T>>, tx: ProjectionTx): void;
    partitioned?: boolean;
  }): Projection<Picked<Events, T>> => ({
    name: def.name,
    handles: new Set<T>(def.handles),
    apply: def.apply,
    ...(def.partitioned === undefined ? {} : { partitioned: def.partitioned }),
  });
}

/** The reactor twin of `projection()`. */
export function reactor<Events extends EventShape>() {
  return <const T extends Events['type']>(def: {
    name: string;
    handles: readonly T[];
    react(event: Recorded<Picked<Events, T>>): Promise<void>;
  }): Reactor<Picked<Events, T>> => ({ name: def.name, handles: new Set<T>(def.handles), react: def.react });
}
