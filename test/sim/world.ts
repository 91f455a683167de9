import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, type Hash } from 'node:crypto';
import { Prng } from './prng';

/**
 * The simulated world: one thread runs every process; simulated time jumps to the next event; one
 * seeded generator (Prng) picks which pending port call runs next and how it ends.
 *
 * Every port call of a simulated process (a Redis round trip, an event-store call, a payment, a
 * chunk from the model, a job) is a Step. Between two steps the real event loop is drained
 * (settle), so exactly one step's effects are in flight at a time and the order of everything is
 * the generator's. A process's steps on one lane (one Redis connection) keep their order, as TCP does.
 */

export type Port = 'redis' | 'store' | 'gateway' | 'upstream' | 'queue';
export type Outcome = 'ok' | 'delay' | 'unavailable' | 'ack_lost' | 'crash_before' | 'crash_after' | 'twice';
export const FAULTS: Outcome[] = ['delay', 'unavailable', 'ack_lost', 'crash_before', 'crash_after', 'twice'];

export class Proc {
  dead = false;
  pausedUntil = 0;
  /** Run when the process dies: its connections drop what they hold. */
  readonly onCrash: Array<() => void> = [];
  constructor(
    readonly name: string,
    readonly kind: 'api' | 'projector' | 'worker' | 'sweeper' | 'caller' | 'world',
    /** Whether the simulator may crash it (callers and the world itself never crash). */
    readonly crashable: boolean,
  ) {}
}

interface Step {
  seq: number;
  proc: Proc;
  port: Port;
  label: string;
  lane: unknown;
  readyAt: number;
  allowed: readonly Outcome[];
  run(o: Outcome): Promise<void>;
}

interface Timer {
  id: number;
  at: number;
  seq: number;
  proc: Proc | undefined;
  cb: () => void;
  interval: number | null;
  cleared: boolean;
}

export interface FaultRates {
  /** Probability that a step's outcome is a fault (then one of the step's allowed faults, uniformly). */
  step: Record<Port, number>;
}

const realSetImmediate = setImmediate;
export const timerSites = new Map<string, number>();
export const prof = { run: 0, settle: 0, after: 0, loopSettle: 0, loops: 0 };

export class SimFailure extends Error {
  constructor(
    readonly invariant: string,
    message: string,
  ) {
    super(`${invariant}: ${message}`);
  }
}

/**
 * One for every world of the process: work a finished schedule left behind (a chain of promises
 * still running when its world ended) is known by its process, which `end` marked dead, so it can
 * register no step or timer in the next schedule's world.
 */
const ALS = new AsyncLocalStorage<Proc>();

export class World {
  readonly rng: Prng;
  readonly als = ALS;
  private readonly procs = new Set<Proc>();
  readonly worldProc = new Proc('world', 'world', false);
  now = 0;
  /** Virtual time starts here (ms since the epoch): a fixed date, so month boundaries are seeded too. */
  readonly epoch: number;
  private seq = 0;
  private steps: Step[] = [];
  private timers: Timer[] = [];
  private timerSeq = 0;
  /** Real setImmediate callbacks not yet run (the event loop is settled when none is left). */
  immediates = 0;
  faultsOn = false;
  rates: FaultRates;
  stepsRun = 0;
  readonly faultCounts = new Map<string, number>();
  private readonly hash: Hash = createHash('sha256');
  private readonly tail: string[] = [];
  /** Called after every step (invariants). */
  afterStep: () => Promise<void> = async () => undefined;
  /** Called between steps while faults are on: may inject a fault of the world (flush, clock jump…). */
  between: () => Promise<void> = async () => undefined;

  constructor(readonly seed: number) {
    this.rng = new Prng(seed);
    // Far ahead of Redis's own clock: an EXPIREAT on simulated time (usage buckets, key-index copies)
    // then never fires during a run, whatever the real date and however long the run takes.
    this.epoch = Date.UTC(2100, 0, 1) + this.rng.int(360) * 86_400_000 + this.rng.int(86_400_000);
    this.rates = { step: { redis: 0, store: 0, gateway: 0, upstream: 0, queue: 0 } };
  }

  /** Milliseconds since the epoch, on the simulated clock. */
  nowMs(): number {
    return this.epoch + this.now;
  }

  current(): Proc {
    return this.als.getStore() ?? this.worldProc;
  }

  /** Runs `fn` as process `proc`: every step and timer it starts belongs to it. */
  within<T>(proc: Proc, fn: () => T): T {
    this.procs.add(proc);
    return this.als.run(proc, fn);
  }

  /** The schedule is over: every process of it is dead, so nothing it left running reaches another world. */
  end(): void {
    for (const p of this.procs) p.dead = true;
    this.worldProc.dead = true;
    this.steps = [];
    this.timers = [];
  }

  trace(line: string): void {
    const l = `${String(this.now).padStart(8)} ${line}`;
    this.hash.update(l + '\n');
    if (process.env.SIM_DEBUG) process.stderr.write(l + '\n');
    this.tail.push(l);
    if (this.tail.length > 400) this.tail.shift();
  }

  traceTail(n = 120): string[] {
    return this.tail.slice(-n);
  }

  traceHash(): string {
    return this.hash.copy().digest('hex').slice(0, 16);
  }

  count(kind: string): void {
    this.faultCounts.set(kind, (this.faultCounts.get(kind) ?? 0) + 1);
  }

  /** Registers a port call; `run` gets the outcome the simulator chose. A dead process's calls never run. */
  step(port: Port, label: string, lane: unknown, allowed: readonly Outcome[], run: (o: Outcome) => Promise<void>): void {
    const proc = this.current();
    if (proc.dead) return;
    this.steps.push({ seq: this.seq++, proc, port, label, lane: lane ?? {}, readyAt: this.now, allowed, run });
  }

  /**
   * A port call as a promise: `apply` does the effect. Outcomes: unavailable (not applied, `fail`),
   * ack_lost (applied, `fail`), twice (applied twice, the first answer), crash before/after.
   */
  call<T>(
    port: Port,
    label: string,
    lane: unknown,
    allowed: readonly Outcome[],
    apply: () => Promise<T> | T,
    fail: (o: Outcome) => Error,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.step(port, label, lane, allowed, async (o) => {
        const proc = this.current();
        switch (o) {
          case 'unavailable':
            return reject(fail(o));
          case 'crash_before':
            return this.crash(proc, `${port} ${label}`);
          default:
            break;
        }
        let result: { ok: true; v: T } | { ok: false; e: unknown };
        try {
          result = { ok: true, v: await apply() };
        } catch (e) {
          result = { ok: false, e };
        }
        if (o === 'twice') {
          try {
            await apply();
          } catch {
            // the second delivery's answer goes nowhere
          }
        }
        if (o === 'crash_after') return this.crash(proc, `${port} ${label}`);
        if (o === 'ack_lost') return reject(fail(o));
        if (result.ok) resolve(result.v);
        else reject(result.e);
      });
    });
  }

  crash(proc: Proc, at: string): void {
    if (proc.dead || !proc.crashable) return;
    proc.dead = true;
    this.trace(`CRASH ${proc.name} at ${at}`);
    this.steps = this.steps.filter((s) => s.proc !== proc);
    for (const t of this.timers) if (t.proc === proc) t.cleared = true;
    for (const f of proc.onCrash) f();
  }

  // ---- virtual timers -------------------------------------------------------------------------

  setTimer(cb: () => void, ms: number, interval: boolean): Timer {
    const proc = this.als.getStore();
    if (process.env.SIM_TIMERS) {
      const site = (new Error().stack ?? '').split('\n').slice(3, 5).join(' | ');
      timerSites.set(`${ms} ${site}`, (timerSites.get(`${ms} ${site}`) ?? 0) + 1);
    }
    const delay = Math.max(1, Math.floor(Number(ms) || 0));
    const t: Timer = {
      id: ++this.timerSeq,
      at: this.now + delay,
      seq: this.seq++,
      proc,
      cb,
      interval: interval ? delay : null,
      cleared: false,
    };
    if (!proc?.dead) this.timers.push(t);
    return t;
  }

  clearTimer(t: Timer | undefined): void {
    if (t) t.cleared = true;
  }

  private nextTimer(): Timer | undefined {
    let best: Timer | undefined;
    const live: Timer[] = [];
    for (const t of this.timers) {
      if (t.cleared) continue;
      live.push(t);
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    this.timers = live;
    return best;
  }

  // ---- the loop ---------------------------------------------------------------------------------

  /** Drains the real event loop: every microtask and every real setImmediate has run. */
  async settle(): Promise<void> {
    do {
      await new Promise<void>((r) => realSetImmediate(r));
    } while (this.immediates > 0);
  }

  private pickable(): Step[] {
    const seen = new Set<unknown>();
    const out: Step[] = [];
    for (const s of this.steps) {
      if (seen.has(s.lane)) continue;
      seen.add(s.lane);
      if (s.readyAt <= this.now && s.proc.pausedUntil <= this.now && !s.proc.dead) out.push(s);
    }
    return out;
  }

  private outcomeFor(s: Step): Outcome {
    if (!this.faultsOn || s.allowed.length === 0) return 'ok';
    if (!this.rng.chance(this.rates.step[s.port])) return 'ok';
    // A crash is rarer than a lost or refused call: one in ten faults of a kind that allows it.
    const crashes = s.allowed.filter((x) => x === 'crash_before' || x === 'crash_after');
    const others = s.allowed.filter((x) => x !== 'crash_before' && x !== 'crash_after');
    let o = crashes.length && (others.length === 0 || this.rng.chance(0.1)) ? this.rng.pick(crashes) : this.rng.pick(others);
    if ((o === 'crash_before' || o === 'crash_after') && !s.proc.crashable) o = 'unavailable';
    return o;
  }

  /**
   * Runs steps and timers until `done()` or virtual time passes `until`. Returns false if nothing
   * was left to run (every process idle) before that.
   */
  async run(until: number, done: () => boolean = () => false): Promise<boolean> {
    for (;;) {
      const ts = performance.now();
      await this.settle();
      prof.loopSettle += performance.now() - ts;
      prof.loops++;
      if (done()) return true;
      this.steps = this.steps.filter((s) => !s.proc.dead);
      const ready = this.pickable();
      if (ready.length > 0) {
        const s = this.rng.pick(ready);
        const o = this.outcomeFor(s);
        if (o === 'delay') {
          s.readyAt = this.now + this.rng.between(1, 2000);
          this.trace(`${s.proc.name} ${s.port} ${s.label} delay→${s.readyAt}`);
          this.count(`${s.port}:delay`);
          continue;
        }
        this.steps.splice(this.steps.indexOf(s), 1);
        this.trace(`${s.proc.name} ${s.port} ${s.label}${o === 'ok' ? '' : ` ⇒ ${o}`}`);
        if (o !== 'ok') this.count(`${s.port}:${o}`);
        this.stepsRun++;
        const t0 = performance.now();
        await this.within(s.proc, () => s.run(o));
        const t1 = performance.now();
        await this.settle();
        const t2 = performance.now();
        await this.afterStep();
        if (this.faultsOn) await this.between();
        const t3 = performance.now();
        prof.run += t1 - t0;
        prof.settle += t2 - t1;
        prof.after += t3 - t2;
        continue;
      }
      // Nothing can run now: time jumps to the next timer or delayed step.
      const t = this.nextTimer();
      let next = t ? t.at : Infinity;
      const heads = new Set<unknown>();
      for (const s of this.steps) {
        if (heads.has(s.lane)) continue;
        heads.add(s.lane);
        next = Math.min(next, Math.max(s.readyAt, s.proc.pausedUntil));
      }
      if (next === Infinity) return false;
      if (next > until) {
        this.now = Math.max(this.now, until);
        return false;
      }
      this.now = Math.max(this.now, next);
      if (t && t.at <= this.now) {
        if (t.proc && t.proc.pausedUntil > this.now) {
          t.at = t.proc.pausedUntil;
          continue;
        }
        if (t.interval !== null) t.at = this.now + t.interval;
        else t.cleared = true;
        if (t.proc) this.within(t.proc, t.cb);
        else t.cb();
      }
    }
  }
}
