import { dataString } from '../eventstore/decode';
import type { RecordedEvent } from '../eventstore/port';
import { Keyspace } from './keyspace';
import type { Projection, Reactor } from './projection';

/**
 * Partitioned projections (PROJECTION_PARTITIONS = N > 1): the events of a workspace belong to
 * partition fnv1a(workspaceId) mod N, and each partition is applied by one projector at a time
 * (./partition-lease.ts), with checkpoints and ready markers of its own. Events that name no
 * workspace (UserRegistered, EmailClaimed, …) and every event of a projection that is not per
 * workspace (`partitioned: false`, e.g. users) belong to partition 0. Reactors too run per
 * partition, over its own events, after its projections committed them: a reactor reads the read
 * models of the event's workspace, which its own runner has just brought up to the event. With N = 1
 * there is one partition, whose keys are the unpartitioned ones: a single projector is unchanged.
 */

/** FNV-1a, 32 bits, over the UTF-16 code units: stable across processes, versions and platforms. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * Each event's partition, computed once: a partition's runner asks for every event of the stream,
 * once per projection and reactor, and most are another partition's (the answer depends only on
 * the event and the count, which is the same in every runner of a process).
 */
const seen = new WeakMap<RecordedEvent, number>();

export function partitionOf(event: RecordedEvent, count: number): number {
  if (count <= 1) return 0;
  const cached = seen.get(event);
  if (cached !== undefined) return cached;
  // From the JSON text when the store left it unparsed: another partition's event is never parsed.
  const ws = dataString(event, 'workspaceId');
  const p = ws !== undefined ? fnv1a(ws) % count : 0;
  seen.set(event, p);
  return p;
}

/** One partition's own keys: the checkpoints and ready markers carry `p{index}of{count}`. */
export class PartitionKeyspace extends Keyspace {
  constructor(
    prefix: string,
    readonly index: number,
    readonly count: number,
  ) {
    super(prefix);
  }

  get suffix(): string {
    return this.count <= 1 ? '' : `:p${this.index}of${this.count}`;
  }

  override checkpoint(name: string, gen: string): string {
    return super.checkpoint(name, gen) + this.suffix;
  }

  override ready(name: string): string {
    return super.ready(name) + this.suffix;
  }

  /** A guard per partition: a failed check in one partition's runner aborts no other's batch. */
  override get commitGuard(): string {
    return super.commitGuard + this.suffix;
  }

  /** Each partition runs the reactors over its own events, with checkpoints of its own. */
  override reactorCheckpoint(name: string): string {
    return super.reactorCheckpoint(name) + this.suffix;
  }

  /** Where reactors kept their checkpoints when partition 0 ran them over every event (before per-partition reactors). */
  legacyReactorCheckpoint(name: string): string {
    return super.reactorCheckpoint(name);
  }

  /** The current owner's fencing token, replaced at each change of owner. */
  get fence(): string {
    return `${this.prefix}proj:partition:${this.index}of${this.count}:fence`;
  }

  get fenceCounter(): string {
    return `${this.prefix}proj:partition:${this.index}of${this.count}:fence-counter`;
  }

  /** The owner's lease: its token, expiring unless renewed. */
  get lease(): string {
    return `${this.prefix}proj:partition:${this.index}of${this.count}:lease`;
  }
}

/** The heartbeats of the projectors sharing `count` partitions (a sorted set: owner → last beat). */
export function partitionMembersKey(prefix: string, count: number): string {
  return `${prefix}proj:partition:${count}:members`;
}

/** Every partition's keyspace (status, readiness and rebuilds look at all of them). */
export function partitionKeyspaces(prefix: string, count: number): PartitionKeyspace[] {
  return Array.from({ length: Math.max(1, count) }, (_, i) => new PartitionKeyspace(prefix, i, Math.max(1, count)));
}

/**
 * `projection` as seen by the owner of one partition: it applies only that partition's events;
 * its checkpoint still moves over every event, so partitions never wait on each other.
 */
export function forPartition(projection: Projection, ks: PartitionKeyspace): Projection {
  if (ks.count <= 1) return projection;
  const mine = (e: RecordedEvent) => (projection.partitioned === false ? ks.index === 0 : partitionOf(e, ks.count) === ks.index);
  return {
    ...projection,
    apply(e, tx) {
      if (mine(e)) projection.apply(e, tx);
    },
  };
}

/** `reactor` as run by the owner of one partition: it reacts only to that partition's events. */
export function reactorForPartition(reactor: Reactor, ks: PartitionKeyspace): Reactor {
  if (ks.count <= 1) return reactor;
  return {
    ...reactor,
    async react(e) {
      if (partitionOf(e, ks.count) === ks.index) await reactor.react(e);
    },
  };
}

/** The events the owner of one partition acts on: its workspaces' and, on partition 0, any a projection that is not per workspace handles. */
export function ownedBy(ks: PartitionKeyspace, projections: readonly Projection[]): ((e: RecordedEvent) => boolean) | undefined {
  if (ks.count <= 1) return undefined;
  const shared = ks.index === 0 ? projections.filter((p) => p.partitioned === false) : [];
  return (e) => partitionOf(e, ks.count) === ks.index || shared.some((p) => p.handles.has(e.type));
}
