import type { RecordedEvent, Subscription } from '../eventstore/port';
import type { ProjectionState } from './apply-batch';
import { catchUp } from './catch-up';
import { batched } from './batched';
import { runReactors } from './reactions';
import { dropAbandonedGenerations } from './generations';
import { PositionWaiters } from './position-waiters';
import { PreparedBatch, startBatch, typesRead } from './runner-batch';
import { loadRunnerState } from './runner-state';
import { DEFAULT_WATCH_MS, RunnerOptions } from './runner-options';
import { adoptRebuilt, advanceCheckpoints, FencedOut, GenerationSwitched, guardedOutcome, markReady, movedUnderneath } from './switch-over';

export type { RunnerOptions } from './runner-options';

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
  private readonly waiters = new PositionWaiters();
  /** What read-your-writes waits for: the projections' checkpoints alone, not the reactors'. */
  private readModelsAt = 0n;
  private readonly readModelWaiters = new PositionWaiters();
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

  /** Resolves once every projection and reactor has applied the event at `position` (or on timeout, false). */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.minCheckpoint >= position) return Promise.resolve(true);
    return this.waiters.wait(position, timeoutMs);
  }

  /**
   * Resolves once every projection has applied the event at `position`, without waiting for the
   * reactors (a webhook's enqueue, say): an api in another process sees only the projections'
   * checkpoints, and read-your-writes waits for the same in every role.
   */
  waitForReadModels(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.readModelsAt >= position || this.opts.projections.length === 0) return Promise.resolve(true);
    return this.readModelWaiters.wait(position, timeoutMs);
  }

  private async loadState(): Promise<void> {
    const { projections, reactors = [] } = this.opts;
    if (projections.length + reactors.length === 0) this.processed = await this.opts.store.headPosition();
    await loadRunnerState(this.opts, this.state, this.reactorCheckpoints);
    this.updateMin();
  }

  private updateMin(): void {
    this.minCheckpoint = this.progressAfter(NOTHING_MOVED);
    let readModels: bigint | null = null;
    for (const s of this.state.values()) if (readModels === null || s.checkpoint < readModels) readModels = s.checkpoint;
    this.readModelsAt = readModels ?? this.processed;
    this.readModelWaiters.reached(this.readModelsAt);
    this.waiters.reached(this.minCheckpoint);
  }

  private async loop(): Promise<void> {
    let backoff = 100;
    while (this.running) {
      try {
        await this.catchUp();
        await adoptRebuilt(this.opts, this.state);
        this.updateMin();
        if (!this.running) break;
        this.sub = this.opts.store.subscribeToAll({ after: this.minCheckpoint, decode: typesRead(this.opts) });
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
        if (err instanceof FencedOut) {
          this.opts.log.warn({ err: err.message }, 'another projector owns this partition now; its batch was refused');
          this.running = false;
          await this.sub?.close();
          this.sub = null;
          this.opts.onFencedOut?.();
          break;
        }
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
      if (await movedUnderneath(redis, ks, projections, this.state, () => this.idle)) this.interrupt();
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

  /** Sets every projection's ready marker, if Redis still holds exactly what the runner holds. */
  private async markCaughtUp(): Promise<void> {
    const { redis, ks, projections } = this.opts;
    await markReady(redis, ks, projections, this.state);
    this.markedCaughtUp();
  }

  /** Reads straight from the store in large batches until the head (catch-up.ts). */
  private catchUp(): Promise<void> {
    return catchUp({
      opts: this.opts,
      state: this.state,
      running: () => this.running,
      minCheckpoint: () => this.minCheckpoint,
      send: (batch) => this.send(batch),
      react: (events, through) => this.react(events, through),
      markCaughtUp: () => this.markCaughtUp(),
    });
  }

  private async commit(events: RecordedEvent[], live: boolean): Promise<void> {
    const owns = this.opts.owns;
    if (owns && this.opts.projections.length > 0 && !events.some(owns)) return this.advanceOnly(events);
    const builder = startBatch(this.opts, this.state, live);
    builder.add(events);
    await this.send(builder.finish());
  }

  /**
   * A batch of other partitions' events: every projection and reactor checkpoint moves past it in
   * one script (switch-over.ts advanceCheckpoints), with nothing to apply or react to. Most live
   * batches of a partition's runner are such when each holds one request's events.
   */
  private async advanceOnly(events: RecordedEvent[]): Promise<void> {
    const { redis, ks, projections } = this.opts;
    const last = events[events.length - 1].position;
    if (last > this.processed) this.processed = last;
    const moved = projections.filter((p) => this.state.get(p.name)!.checkpoint < last);
    const reactors = [...this.reactorCheckpoints].filter(([, cp]) => cp < last).map(([name]) => name);
    if (moved.length + reactors.length === 0) return;
    const keys = [...moved.map((p) => ks.checkpoint(p.name, this.state.get(p.name)!.gen)), ...reactors.map((n) => ks.reactorCheckpoint(n))];
    // What every checkpoint will be once the script ran: the lowest is the progress announced.
    const after = (c: bigint) => (c > last ? c : last);
    const progress = [
      ...[...this.state.values()].map((s) => after(s.checkpoint)),
      ...[...this.reactorCheckpoints.values()].map(after),
    ].reduce((a, b) => (b < a ? b : a));
    await advanceCheckpoints(redis, ks, projections, this.state, this.opts.fence, last, keys, progress);
    for (const p of moved) this.state.get(p.name)!.checkpoint = last;
    for (const n of reactors) this.reactorCheckpoints.set(n, last);
    this.updateMin();
  }

  /**
   * Commits a built batch in one round trip: its guard (switch-over.ts guardBatch) lets the MULTI
   * commit only if the fence and every pointer and checkpoint are what the batch was built from.
   */
  private async send(batch: PreparedBatch): Promise<void> {
    const { ks, fence } = this.opts;
    if (batch.token === null) throw new FencedOut('partition fenced: this runner holds no token');
    if (batch.last > this.processed) this.processed = batch.last;
    if (!batch.multi) {
      this.updateMin();
      return;
    }
    // Built under another token (the runner lost and took the partition again meanwhile): build it anew.
    if (fence && fence.token() !== batch.token)
      throw fence.token() === null ? new FencedOut('partition fenced: this runner holds no token') : new GenerationSwitched();
    // The progress announcement goes inside the MULTI: it is sent only if the batch commits, and
    // costs no round trip of its own (a throttled projector pays per round trip, not per command).
    batch.multi.publish(ks.progressChannel, this.progressAfter(batch.next).toString());
    void batch.multi.exec(); // queues the EXEC; the next exec() sends the pipeline
    const replies = guardedOutcome((await batch.multi.exec()) as Array<[Error | null, unknown]> | null, batch.token);
    const failed = replies.find((r) => r instanceof Error);
    if (failed) this.opts.log.error({ err: failed }, 'a projection command failed inside a committed batch');
    for (const [name, cp] of batch.next) this.state.get(name)!.checkpoint = cp;
    this.updateMin();
  }

  /**
   * What minCheckpoint will be once a batch leaving the projections at `next` committed (the
   * reactors not moved yet): the lowest checkpoint; with nothing to checkpoint, whatever was read.
   */
  private progressAfter(next: ReadonlyMap<string, bigint>): bigint {
    let min: bigint | null = null;
    for (const [name, s] of this.state) {
      const c = next.get(name) ?? s.checkpoint;
      if (min === null || c < min) min = c;
    }
    for (const c of this.reactorCheckpoints.values()) if (min === null || c < min) min = c;
    return min ?? this.processed;
  }

  /** Runs the reactors over `events`, then moves their checkpoints to `through` (default: the last event). */
  private async react(events: RecordedEvent[], through?: bigint): Promise<void> {
    const { reactors = [], redis, ks } = this.opts;
    await runReactors(reactors, this.reactorCheckpoints, events, redis, ks, through);
    this.updateMin();
  }
}

const NOTHING_MOVED: ReadonlyMap<string, bigint> = new Map();
