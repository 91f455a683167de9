import type { Redis } from 'ioredis';
import type { EventStore, RecordedEvent } from '../eventstore/port';
import type { Logger } from '../log';
import type { Keyspace } from './keyspace';
import type { Projection, Reactor } from './projection';
import type { Fence } from './switch-over';

/** What the projection runner (runner.ts) is built from; a partition's runner also gets `fence` and `owns`. */
export interface RunnerOptions {
  store: EventStore;
  /** A connection of the runner's own: WATCH is per connection. */
  redis: Redis;
  ks: Keyspace;
  projections: Projection[];
  reactors?: Reactor[];
  batchSize: number;
  log: Logger;
  /** Subscriber for switch-over announcements: a rebuild's switch is picked up at once, else within `watchIntervalMs`. */
  notifications?: Redis;
  /**
   * How often an idle runner compares Redis with what it holds: a switched generation, a moved
   * checkpoint or a Redis that lost its data (flushed, restarted empty) is noticed without an event.
   */
  watchIntervalMs?: number;
  /** Told when Redis lost a projection's state and the runner rebuilds it from the store. */
  onStateLost?: (name: string) => void;
  /** A partition owner's fencing token: every batch commits only while Redis holds it. */
  fence?: Fence;
  /** Told when the fence refused a batch: the runner has stopped (its partition moved). */
  onFencedOut?: () => void;
  /**
   * A partition's events (those some projection or reactor of this runner acts on). A live batch
   * with none of them only moves the checkpoints, in one script (advanceOnly).
   */
  owns?: (e: RecordedEvent) => boolean;
}

/** How often an idle runner compares Redis with what it holds, unless `watchIntervalMs` says otherwise. */
export const DEFAULT_WATCH_MS = 500;
