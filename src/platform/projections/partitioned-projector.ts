import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { disconnectRedis } from '../redis';
import type { Logger } from '../log';
import { PartitionLease } from './partition-lease';
import { forPartition, ownedBy, partitionKeyspaces, PartitionKeyspace, partitionMembersKey, reactorForPartition } from './partitions';
import type { RunnerOptions } from './runner';
import { ProjectionRunner } from './runner';

export interface PartitionedOptions extends Omit<RunnerOptions, 'redis' | 'ks' | 'fence' | 'onFencedOut' | 'notifications'> {
  prefix: string;
  partitions: number;
  /** How long a lease lasts unrenewed: a dead projector's partitions move after at most this. */
  leaseMs: number;
  /** A connection of its own for each partition's runner (WATCH is per connection), and one for the leases. */
  connect(name: string): Promise<Redis>;
  log: Logger;
  /** This projector's id in the leases (default: random). */
  owner?: string;
  /** The clock of the members' heartbeats (default: Date.now; a simulation passes its own). */
  now?: () => number;
}

/**
 * Several projector processes share the partitions (./partitions.ts): each heartbeats in a
 * members set, holds about partitions / members leases (./partition-lease.ts) and runs one
 * ProjectionRunner per partition it holds. A dead projector's leases expire and the others take
 * its partitions; one that joins (or comes back) gets its share as the others give up their
 * extras. Each partition's runner also runs the reactors over that partition's events, so the
 * reactors' work (read-model reads, queue writes) is shared like the projections'; the few events
 * that name no workspace and the projections that are not per workspace stay with partition 0.
 */
export class PartitionedProjector {
  private readonly owner: string;
  private readonly held = new Map<number, { lease: PartitionLease; runner: ProjectionRunner; redis: Redis }>();
  private readonly keyspaces: PartitionKeyspace[];
  private leaseRedis: Redis | null = null;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly opts: PartitionedOptions) {
    this.owner = opts.owner ?? randomUUID();
    this.keyspaces = partitionKeyspaces(opts.prefix, opts.partitions);
  }

  /** The partitions this projector applies now. */
  get partitions(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** The lowest position every partition this process holds has applied (for read-your-writes in-process). */
  get runners(): ProjectionRunner[] {
    return [...this.held.values()].map((h) => h.runner);
  }

  async start(): Promise<void> {
    this.leaseRedis = await this.opts.connect('projector-leases');
    await this.tick();
    this.timer = setInterval(() => void (this.ticking = this.ticking.then(() => this.tick())), Math.max(100, this.opts.leaseMs / 3));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const i of this.partitions) await this.drop(i, true);
    await this.leaseRedis?.zrem(this.membersKey, this.owner).catch(() => undefined);
  }

  private get membersKey(): string {
    return partitionMembersKey(this.opts.prefix, this.opts.partitions);
  }

  /** Heartbeat, renew, give up extras, take free partitions up to a fair share. */
  private async tick(): Promise<void> {
    if (this.stopped || !this.leaseRedis) return;
    const redis = this.leaseRedis;
    try {
      const now = (this.opts.now ?? Date.now)();
      await redis.zadd(this.membersKey, now, this.owner);
      await redis.zremrangebyscore(this.membersKey, '-inf', now - this.opts.leaseMs);
      const members = Math.max(1, await redis.zcard(this.membersKey));
      const fair = Math.ceil(this.opts.partitions / members);
      for (const [i, h] of [...this.held]) if (!(await h.lease.renew())) await this.drop(i, false);
      while (this.held.size > fair) await this.drop(Math.max(...this.held.keys()), true);
      // Start looking at a place of its own, so projectors starting together spread out.
      const start = parseInt(this.owner.replace(/[^0-9a-f]/gi, '').slice(0, 6) || '0', 16) % this.opts.partitions;
      for (let k = 0; k < this.opts.partitions && this.held.size < fair; k++) {
        const i = (start + k) % this.opts.partitions;
        if (this.held.has(i)) continue;
        const lease = new PartitionLease(redis, this.keyspaces[i], this.owner, this.opts.leaseMs);
        if (await lease.acquire()) await this.run(i, lease);
      }
    } catch (err) {
      this.opts.log.error({ err }, 'partition leases: Redis failed; retrying');
    }
  }

  private async run(i: number, lease: PartitionLease): Promise<void> {
    const ks = this.keyspaces[i];
    const redis = await this.opts.connect(`projector-p${i}`);
    await this.adoptLegacyReactorCheckpoints(redis, ks);
    const runner = new ProjectionRunner({
      ...this.opts,
      redis,
      ks,
      projections: this.opts.projections.map((p) => forPartition(p, ks)),
      reactors: (this.opts.reactors ?? []).map((r) => reactorForPartition(r, ks)),
      owns: ownedBy(ks, this.opts.projections),
      log: this.opts.log.child({ partition: i }),
      fence: { key: ks.fence, token: () => lease.token },
      onFencedOut: () => void (this.ticking = this.ticking.then(() => this.drop(i, false))),
    });
    this.held.set(i, { lease, runner, redis });
    this.opts.log.info({ partition: i, token: lease.token }, 'took partition');
    try {
      await runner.start();
    } catch (err) {
      // A runner that could not load its state never runs: holding (and renewing) the lease would
      // stall the partition for good. Give it up; the next tick takes it again.
      await this.drop(i, true);
      throw err;
    }
  }

  /**
   * A deployment that ran the reactors on partition 0 alone kept one checkpoint per reactor: each
   * partition starts from it (SET NX) rather than from the head, so nothing between is missed.
   */
  private async adoptLegacyReactorCheckpoints(redis: Redis, ks: PartitionKeyspace): Promise<void> {
    for (const r of this.opts.reactors ?? []) {
      const legacy = await redis.get(ks.legacyReactorCheckpoint(r.name));
      if (legacy !== null) await redis.set(ks.reactorCheckpoint(r.name), legacy, 'NX');
    }
  }

  private async drop(i: number, release: boolean): Promise<void> {
    const h = this.held.get(i);
    if (!h) return;
    this.held.delete(i);
    await h.runner.stop().catch(() => undefined);
    if (release) await h.lease.release().catch(() => undefined);
    disconnectRedis(h.redis);
    this.opts.log.info({ partition: i }, release ? 'gave partition up' : 'lost partition');
  }
}
