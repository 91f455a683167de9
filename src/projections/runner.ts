import type { ChainableCommander, Redis } from 'ioredis';
import type { EventStore, RecordedEvent, Subscription } from '../eventstore/port';
import type { Logger } from '../log';
import { batched } from './batched';
import { Keyspace } from './keyspace';
import type { Projection, ProjectionTx, Reactor } from './projection';
import { dropAbandonedGenerations } from './generations';

export interface RunnerOptions {
  store: EventStore;
  /** A connection of the runner's own: WATCH is per connection. */
  redis: Redis;
  ks: Keyspace;
  projections: Projection[];
  reactors?: Reactor[];
  batchSize: number;
  log: Logger;
  /**
   * A subscriber connection for switch-over announcements: with it, a rebuild's switch is picked
   * up at once; without it, within `watchIntervalMs`.
   */
  notifications?: Redis;
  /**
   * How often an idle runner compares Redis with what it holds: a switched generation, a moved
   * checkpoint or a Redis that lost its data (flushed, restarted empty) is noticed without an event.
   */
  watchIntervalMs?: number;
  /** Told when Redis lost a projection's state and the runner rebuilds it from the store. */
  onStateLost?: (name: string) => void;
}

const DEFAULT_WATCH_MS = 500;

// ARGV: per projection (pointer key, generation, checkpoint key, checkpoint, ready key). Sets the
// ready markers only if every pointer and checkpoint is still what the runner holds.
const MARK_READY = `
for i = 1, #ARGV, 5 do
  if (redis.call('GET', ARGV[i]) or '0') ~= ARGV[i + 1] then return 0 end
  if (redis.call('GET', ARGV[i + 2]) or '0') ~= ARGV[i + 3] then return 0 end
end
for i = 1, #ARGV, 5 do redis.call('SET', ARGV[i + 4], ARGV[i + 3]) end
return 1`;

// KEYS: active pointer, the old generation's checkpoint, pending, building set. ARGV: old generation,
// its checkpoint, the new generation. Switches to a rebuild's generation the runner has caught up,
// only if nothing moved meanwhile; -1 for an offer whose rebuild is gone (its generation was dropped).
const ADOPT = `
if redis.call('SISMEMBER', KEYS[4], ARGV[3]) == 0 then
  if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
  return -1
end
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then return 0 end
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[2] then return 0 end
if redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('DEL', KEYS[3])
redis.call('SREM', KEYS[4], ARGV[3])
return 1`;

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
  /** Set when the watcher saw Redis differ from what the runner holds. */
  private interrupted = false;
  /** True while the loop waits on its live subscription (and nothing else touches Redis). */
  private idle = false;
  private watchTimer: NodeJS.Timeout | null = null;
  private watching = false;
  private markedCaughtUp: () => void = () => undefined;
  /** Resolves the first time every projection is caught up (its ready marker set). */
  readonly caughtUp = new Promise<void>((r) => (this.markedCaughtUp = r));

  constructor(private readonly opts: RunnerOptions) {}

  /** Position every projection has reached. */
  get position(): bigint {
    return this.minCheckpoint;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.loadState();
    for (const p of this.opts.projections) await dropAbandonedGenerations(this.opts.redis, this.opts.ks, p.name);
    const n = this.opts.notifications;
    if (n) {
      n.on('message', (channel: string) => {
        if (channel === this.opts.ks.switchChannel) this.interrupt();
      });
      await n.subscribe(this.opts.ks.switchChannel);
    }
    this.watchTimer = setInterval(() => void this.watch(), this.opts.watchIntervalMs ?? DEFAULT_WATCH_MS);
    this.watchTimer.unref();
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = null;
    await this.opts.notifications?.unsubscribe().catch(() => undefined);
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
    for (const p of projections) {
      const before = this.state.get(p.name);
      const now = await loadProjectionState(redis, ks, p.name);
      // Same generation but an older checkpoint (or the pointer gone): Redis lost its data. The
      // ready marker goes until the catch-up from the store is done, so the api answers 503.
      const lost = before && ((now.gen === before.gen && now.checkpoint < before.checkpoint) || (now.gen === '0' && before.gen !== '0'));
      if (lost) {
        await redis.del(ks.ready(p.name));
        this.opts.log.warn({ projection: p.name, checkpoint: now.checkpoint.toString() }, 'Redis lost this read model; rebuilding it from the event store');
        this.opts.onStateLost?.(p.name);
      }
      this.state.set(p.name, now);
    }
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
        await this.adoptPending();
        if (!this.running) break;
        this.sub = this.opts.store.subscribeToAll({ after: this.minCheckpoint });
        // stop() may have run while catching up, before this subscription existed.
        if (!this.running) break;
        this.idle = true;
        for await (const events of batched(this.sub, this.opts.batchSize)) {
          this.idle = false;
          if (!this.running || this.interrupted) break;
          await this.commit(events, true);
          await this.react(events);
          backoff = 100;
          if (this.interrupted) break;
          this.idle = true;
        }
        this.idle = false;
        if (this.interrupted) throw new GenerationSwitched();
      } catch (err) {
        this.idle = false;
        this.interrupted = false;
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

  /**
   * Compares Redis with what the runner holds while it waits for events; any difference (a
   * switched generation, a moved checkpoint, a missing ready marker) wakes the loop to reload.
   */
  private async watch(): Promise<void> {
    if (!this.running || this.watching) return;
    this.watching = true;
    try {
      const { redis, ks, projections } = this.opts;
      if (projections.length === 0) return;
      const idle = this.idle;
      const pointers = projections.map((p) => ks.active(p.name));
      const checkpoints = projections.map((p) => ks.checkpoint(p.name, this.state.get(p.name)!.gen));
      const ready = projections.map((p) => ks.ready(p.name));
      const offers = projections.map((p) => ks.pending(p.name));
      const seen = await redis.mget(...pointers, ...checkpoints, ...ready, ...offers);
      const n = projections.length;
      const offered = projections.some((p, i) => seen[3 * n + i] !== null && seen[3 * n + i] !== this.state.get(p.name)!.gen);
      // While committing, pointers and checkpoints move under the runner's own hand: only an offer counts.
      const differs =
        idle &&
        this.idle &&
        projections.some((p, i) => {
          const st = this.state.get(p.name)!;
          const cp = seen[n + i];
          return (seen[i] ?? '0') !== st.gen || (cp ? BigInt(cp) : 0n) !== st.checkpoint || seen[2 * n + i] === null;
        });
      if (offered || differs) this.interrupt();
      else if (idle) for (const p of projections) if (await redis.scard(ks.building(p.name))) await dropAbandonedGenerations(redis, ks, p.name);
    } catch {
      // Redis unreachable: the loop reports it when it next needs Redis.
    } finally {
      this.watching = false;
    }
  }

  /** Makes the loop reload its state from Redis and catch up from there, now. */
  private interrupt(): void {
    if (!this.running) return;
    this.interrupted = true;
    if (this.idle) void this.sub?.close();
  }

  /**
   * Takes over generations that rebuilds finished: applies to each what this runner applied since
   * the rebuild's checkpoint, then switches the pointer in one script (see ADOPT).
   */
  private async adoptPending(): Promise<void> {
    const { redis, ks, projections, store } = this.opts;
    if (projections.length === 0) return;
    const offers = await redis.mget(...projections.map((p) => ks.pending(p.name)));
    const size = Math.max(this.opts.batchSize, 2000);
    for (const [i, p] of projections.entries()) {
      const gen = offers[i];
      const st = this.state.get(p.name)!;
      if (gen === null || gen === st.gen) continue;
      const cp = await redis.get(ks.checkpoint(p.name, gen));
      const next: ProjectionState = { gen, checkpoint: cp ? BigInt(cp) : 0n };
      while (next.checkpoint < st.checkpoint) {
        const from = next.checkpoint;
        const events = (await store.readAll({ fromPosition: from, maxCount: size + 1 })).filter(
          (e) => e.position > from && e.position <= st.checkpoint,
        );
        if (events.length === 0) break;
        const pipeline = redis.pipeline();
        next.checkpoint = applyBatch(ks, p, next, events, pipeline, false);
        const failed = (await pipeline.exec())?.find(([err]) => err);
        if (failed) throw failed[0];
      }
      const adopted = (await redis.eval(
        ADOPT,
        4,
        ks.active(p.name),
        ks.checkpoint(p.name, st.gen),
        ks.pending(p.name),
        ks.building(p.name),
        st.gen,
        st.checkpoint.toString(),
        gen,
      )) as number;
      if (adopted === 0) throw new GenerationSwitched();
      if (adopted === 1) {
        this.state.set(p.name, next);
        this.opts.log.info({ projection: p.name, generation: gen }, 'switched to a rebuilt generation');
      }
    }
    this.updateMin();
  }

  /** Sets every projection's ready marker, if Redis still holds exactly what the runner holds. */
  private async markCaughtUp(): Promise<void> {
    const { redis, ks, projections } = this.opts;
    if (projections.length === 0) return this.markedCaughtUp();
    const args = projections.flatMap((p) => {
      const st = this.state.get(p.name)!;
      return [ks.active(p.name), st.gen, ks.checkpoint(p.name, st.gen), st.checkpoint.toString(), ks.ready(p.name)];
    });
    if ((await redis.eval(MARK_READY, 0, ...args)) !== 1) throw new GenerationSwitched();
    this.markedCaughtUp();
  }

  /** Reads straight from the store in large batches until the head: fast start after downtime. */
  private async catchUp(): Promise<void> {
    const size = Math.max(this.opts.batchSize, 2000);
    let lastLog = Date.now();
    // Up to the head seen on entry: under constant writes the live subscription takes over from there.
    const head = await this.opts.store.headPosition();
    for (;;) {
      const from = this.minCheckpoint;
      if (!this.running) return;
      if (from >= head) return this.markCaughtUp();
      if (Date.now() - lastLog > 2000) {
        lastLog = Date.now();
        this.opts.log.info({ position: from.toString(), head: head.toString() }, 'projections catching up');
      }
      const events = (await this.opts.store.readAll({ fromPosition: from, maxCount: size + 1 })).filter(
        (e) => e.position > from,
      );
      if (events.length === 0) return this.markCaughtUp();
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
