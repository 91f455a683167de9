import type { ChainableCommander, Redis } from 'ioredis';
import type { EventStore, RecordedEvent, Subscription } from '../eventstore/port';
import type { Logger } from '../log';
import { batched } from './batched';
import { Keyspace } from './keyspace';
import type { Projection, ProjectionTx, Reactor } from './projection';

export interface RunnerOptions {
  store: EventStore;
  /** A connection of the runner's own: WATCH is per connection. */
  redis: Redis;
  ks: Keyspace;
  projections: Projection[];
  reactors?: Reactor[];
  batchSize: number;
  log: Logger;
}

interface ProjectionState {
  gen: string;
  checkpoint: bigint;
}

/**
 * Thrown inside the loop when Redis no longer matches what the runner holds (a rebuild switched a
 * generation, or another runner moved a checkpoint): reload and resubscribe from the checkpoints.
 */
class GenerationSwitched extends Error {}

export function makeTx(ks: Keyspace, name: string, gen: string, multi: ChainableCommander, live: boolean): ProjectionTx {
  const prefix = ks.genPrefix(name, gen);
  return {
    multi,
    live,
    key: (...parts) => prefix + parts.join(':'),
    sharedKey: (...parts) => ks.shared(...parts),
  };
}

/**
 * Queues `events` for one projection on `multi` and returns the new checkpoint (unchanged if every
 * event was already applied). Events at or below the checkpoint are skipped: that is what makes a
 * replay after a crash, or an overlapping resubscription, harmless.
 */
export function applyBatch(
  ks: Keyspace,
  projection: Projection,
  state: ProjectionState,
  events: RecordedEvent[],
  multi: ChainableCommander,
  live: boolean,
): bigint {
  const tx = makeTx(ks, projection.name, state.gen, multi, live);
  let last = state.checkpoint;
  for (const e of events) {
    if (e.position <= last) continue;
    if (projection.handles.has(e.type)) projection.apply(e, tx);
    last = e.position;
  }
  if (last > state.checkpoint) multi.set(ks.checkpoint(projection.name, state.gen), last.toString());
  return last;
}

export async function loadProjectionState(redis: Redis, ks: Keyspace, name: string): Promise<ProjectionState> {
  const gen = (await redis.get(ks.active(name))) ?? '0';
  const cp = await redis.get(ks.checkpoint(name, gen));
  return { gen, checkpoint: cp ? BigInt(cp) : 0n };
}

/**
 * Runs projections (and reactors) live. One loop reads the event store once for all of them; each
 * batch becomes one MULTI holding every projection's changes and its checkpoint.
 */
export class ProjectionRunner {
  private readonly state = new Map<string, ProjectionState>();
  private readonly reactorCheckpoints = new Map<string, bigint>();
  private sub: Subscription | null = null;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wakeBackoff: (() => void) | null = null;
  private minCheckpoint = 0n;
  /** Highest position read from the store (only meaningful with no projection or reactor). */
  private processed = 0n;
  private readonly waiters = new Set<{ position: bigint; resolve: () => void }>();

  constructor(private readonly opts: RunnerOptions) {}

  /** Position every projection has reached. */
  get position(): bigint {
    return this.minCheckpoint;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.loadState();
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeBackoff?.();
    await this.sub?.close();
    await this.loopDone;
    await this.sub?.close();
    this.sub = null;
  }

  /** Resolves once every projection has applied the event at `position` (or on timeout, false). */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.minCheckpoint >= position) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = {
        position,
        resolve: () => {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        resolve(false);
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  private async loadState(): Promise<void> {
    const { redis, ks, projections, reactors = [] } = this.opts;
    if (projections.length + reactors.length === 0) this.processed = await this.opts.store.headPosition();
    for (const p of projections) this.state.set(p.name, await loadProjectionState(redis, ks, p.name));
    for (const r of reactors) {
      const cp = await redis.get(ks.reactorCheckpoint(r.name));
      if (cp !== null) this.reactorCheckpoints.set(r.name, BigInt(cp));
      else {
        // A reactor seen for the first time starts at the head: a fresh Redis must never re-run
        // the side effects of history (charges are decided from the ledger anyway).
        const head = await this.opts.store.headPosition();
        await redis.set(ks.reactorCheckpoint(r.name), head.toString());
        this.reactorCheckpoints.set(r.name, head);
      }
    }
    this.updateMin();
  }

  private updateMin(): void {
    let min: bigint | null = null;
    for (const s of this.state.values()) if (min === null || s.checkpoint < min) min = s.checkpoint;
    for (const c of this.reactorCheckpoints.values()) if (min === null || c < min) min = c;
    // With nothing to checkpoint, the runner has reached whatever it has read.
    this.minCheckpoint = min ?? this.processed;
    for (const w of [...this.waiters]) if (w.position <= this.minCheckpoint) w.resolve();
  }

  private async loop(): Promise<void> {
    let backoff = 100;
    while (this.running) {
      try {
        await this.catchUp();
        if (!this.running) break;
        this.sub = this.opts.store.subscribeToAll({ after: this.minCheckpoint });
        // stop() may have run while catching up, before this subscription existed.
        if (!this.running) break;
        for await (const events of batched(this.sub, this.opts.batchSize)) {
          if (!this.running) break;
          await this.commit(events, true);
          await this.react(events);
          backoff = 100;
        }
      } catch (err) {
        if (!this.running) break;
        if (err instanceof GenerationSwitched) {
          this.opts.log.info('projection generation or checkpoint changed underneath; resubscribing');
        } else {
          this.opts.log.error({ err, retryInMs: backoff }, 'projection runner failed; retrying');
          await new Promise<void>((r) => {
            const t = setTimeout(r, backoff);
            this.wakeBackoff = () => (clearTimeout(t), r());
          });
          this.wakeBackoff = null;
          backoff = Math.min(backoff * 2, 5000);
        }
        await this.sub?.close();
        this.sub = null;
        await this.loadState().catch((e) => this.opts.log.error({ err: e }, 'reloading projection state failed'));
      }
    }
  }

  /** Reads straight from the store in large batches until the head: fast start after downtime. */
  private async catchUp(): Promise<void> {
    const size = Math.max(this.opts.batchSize, 2000);
    let lastLog = Date.now();
    for (;;) {
      const from = this.minCheckpoint;
      const head = await this.opts.store.headPosition();
      if (!this.running || from >= head) return;
      if (Date.now() - lastLog > 2000) {
        lastLog = Date.now();
        this.opts.log.info({ position: from.toString(), head: head.toString() }, 'projections catching up');
      }
      const events = (await this.opts.store.readAll({ fromPosition: from, maxCount: size + 1 })).filter(
        (e) => e.position > from,
      );
      if (events.length === 0) return;
      await this.commit(events, false);
      await this.react(events);
    }
  }

  private async commit(events: RecordedEvent[], live: boolean): Promise<void> {
    const { redis, ks, projections } = this.opts;
    const last = events[events.length - 1]?.position ?? 0n;
    if (last > this.processed) this.processed = last;
    if (projections.length === 0) {
      this.updateMin();
      return;
    }
    // WATCH the active pointers (a rebuild switched a generation) and our checkpoints (another
    // runner committed: never run two, but if it happens, neither applies an event twice).
    const pointers = projections.map((p) => ks.active(p.name));
    const checkpoints = projections.map((p) => ks.checkpoint(p.name, this.state.get(p.name)!.gen));
    await redis.watch(...pointers, ...checkpoints);
    const seen = await redis.mget(...pointers, ...checkpoints);
    const stale = projections.some((p, i) => {
      const st = this.state.get(p.name)!;
      const cp = seen[projections.length + i];
      return (seen[i] ?? '0') !== st.gen || (cp ? BigInt(cp) : 0n) !== st.checkpoint;
    });
    if (stale) {
      await redis.unwatch();
      throw new GenerationSwitched();
    }
    const multi = redis.multi();
    const next = new Map<string, bigint>();
    try {
      for (const p of projections) next.set(p.name, applyBatch(ks, p, this.state.get(p.name)!, events, multi, live));
    } catch (err) {
      await redis.unwatch();
      throw err;
    }
    const results = await multi.exec();
    if (results === null) throw new GenerationSwitched();
    const failed = results.find(([err]) => err);
    if (failed) this.opts.log.error({ err: failed[0] }, 'a projection command failed inside a committed batch');
    for (const [name, cp] of next) this.state.get(name)!.checkpoint = cp;
    this.updateMin();
    await redis.publish(ks.progressChannel, this.minCheckpoint.toString());
  }

  private async react(events: RecordedEvent[]): Promise<void> {
    const { reactors = [], redis, ks } = this.opts;
    for (const r of reactors) {
      const cp = this.reactorCheckpoints.get(r.name) ?? 0n;
      let last = cp;
      for (const e of events) {
        if (e.position <= last) continue;
        if (r.handles.has(e.type)) await r.react(e);
        last = e.position;
      }
      if (last > cp) {
        await redis.set(ks.reactorCheckpoint(r.name), last.toString());
        this.reactorCheckpoints.set(r.name, last);
      }
    }
    this.updateMin();
  }
}
