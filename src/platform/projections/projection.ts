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
  /** A key inside this projection's generation, e.g. key('ws', wsId) → `tg:rm:balances:3:ws:<wsId>`. */
  key(...parts: string[]): string;
  /** A key outside any generation, shared with the api role (reservations, pub/sub channels). */
  sharedKey(...parts: string[]): string;
  /** False while rebuilding: live-only effects (pub/sub pushes) are skipped. */
  readonly live: boolean;
  /**
   * Batched writes (./batch-writes.ts), applied at the end of the projection's batch, after its
   * `multi` commands and in this order: summed HINCRBYs, EXPIREATs, then each `evalEach` script
   * once per call in call order. Cheaper than one command per event; a projection must not mix
   * them with `multi` commands on the same keys, whose order they would not keep.
   */
  hincrby(key: string, field: string, delta: string | number | bigint): void;
  expireAt(key: string, unixSeconds: number): void;
  /** `lua` written for one call (KEYS and ARGV as usual; keys may also be passed in ARGV). */
  evalEach(lua: string, keys: readonly string[], args: readonly string[]): void;
}

export interface Projection {
  readonly name: string;
  /** Event types it applies; the checkpoint also advances over every other event. */
  readonly handles: ReadonlySet<string>;
  apply(event: RecordedEvent, tx: ProjectionTx): void;
  /**
   * False for a read model that is not per workspace (its keys are shared by all workspaces):
   * with PROJECTION_PARTITIONS > 1 all its events are applied by partition 0's owner (./partitions.ts).
   */
  readonly partitioned?: boolean;
}

/**
 * A reactor turns events into side effects (enqueue a charge, say). It is never part of a rebuild
 * or replay, and runs at least once per event after the projections committed: it must be idempotent.
 */
export interface Reactor {
  readonly name: string;
  readonly handles: ReadonlySet<string>;
  react(event: RecordedEvent): Promise<void>;
}
