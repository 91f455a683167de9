import { Session } from 'node:inspector/promises';

/** One function's call count in a coverage window; `key` names it within its script. */
export interface FunctionRun {
  key: string;
  name: string;
  /** Length of the function's source in the script as loaded (after tsx's esbuild transform). */
  length: number;
  count: number;
}

/** Script URL → the functions that ran (count > 0) since the last reset. */
export type Window = Map<string, FunctionRun[]>;

interface ScriptCoverage {
  url: string;
  functions: { functionName: string; ranges: { startOffset: number; endOffset: number; count: number }[] }[];
}

/**
 * V8 precise coverage (call counts, function granularity) of this process's main thread and of every
 * worker thread it starts (the SQLite writer is one), through the inspector. Started before the
 * service's modules load, so every function is counted from its first call. `Profiler.takePreciseCoverage`
 * resets the counters, so a window is a reset followed by a take: the counts it returns are the calls
 * made in between.
 */
export class Coverage {
  private readonly session = new Session();
  private readonly workers = new Map<string, { title: string }>();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private attaching: Promise<unknown>[] = [];

  async start(): Promise<void> {
    this.session.connect();
    this.session.on('NodeWorker.attachedToWorker', ({ params }) => {
      const { sessionId, workerInfo } = params as { sessionId: string; workerInfo: { title: string } };
      this.workers.set(sessionId, { title: workerInfo.title });
      // The worker waits for us: coverage starts before its first line runs.
      this.attaching.push(
        (async () => {
          await this.toWorker(sessionId, 'Profiler.enable');
          await this.toWorker(sessionId, 'Profiler.startPreciseCoverage', { callCount: true, detailed: false });
          await this.toWorker(sessionId, 'Runtime.runIfWaitingForDebugger');
        })().catch(() => undefined),
      );
    });
    this.session.on('NodeWorker.detachedFromWorker', ({ params }) => {
      this.workers.delete((params as { sessionId: string }).sessionId);
    });
    this.session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
      const msg = JSON.parse((params as { message: string }).message) as { id?: number; result?: unknown; error?: { message: string } };
      const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result);
    });
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await this.session.post('NodeWorker.enable', { waitForDebuggerOnStart: true });
  }

  /** Starts a window: every counter (main thread and workers) back to zero. */
  async reset(): Promise<void> {
    await this.take();
  }

  /** Ends a window: the functions that ran since the last reset, per script. */
  async take(): Promise<Window> {
    await Promise.all(this.attaching);
    const out: Window = new Map();
    const add = (scripts: ScriptCoverage[]) => {
      for (const s of scripts) {
        const ran: FunctionRun[] = [];
        for (const f of s.functions) {
          const r = f.ranges[0];
          if (r && r.count > 0)
            ran.push({
              key: `${f.functionName}@${r.startOffset}-${r.endOffset}`,
              name: f.functionName,
              length: r.endOffset - r.startOffset,
              count: r.count,
            });
        }
        if (ran.length) out.set(s.url, [...(out.get(s.url) ?? []), ...ran]);
      }
    };
    const main = (await this.session.post('Profiler.takePreciseCoverage')) as { result: ScriptCoverage[] };
    add(main.result);
    for (const id of [...this.workers.keys()]) {
      const w = (await this.toWorker(id, 'Profiler.takePreciseCoverage').catch(() => ({ result: [] }))) as { result: ScriptCoverage[] };
      add(w.result);
    }
    return out;
  }

  stop(): void {
    this.session.disconnect();
  }

  private toWorker(sessionId: string, method: string, params: object = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.session
        .post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method, params }) })
        .catch((err: Error) => {
          this.pending.delete(id);
          reject(err);
        });
    });
  }
}

/**
 * Holds the service's periodic timers while a window is measured: an interval created before
 * `hold()` (the runner's watch, the readiness refresh, the sweeps) skips its ticks until `release()`,
 * so a tick that happens to fall in the window is not counted as the request's. Intervals created
 * during the window (a request's own lease renewal) run. Installed before the service loads.
 */
export class IntervalHold {
  private held = new WeakSet<object>();
  private holding = false;
  private readonly existing = new Set<WeakRef<object>>();
  skipped = 0;

  install(): void {
    const real = globalThis.setInterval;
    const self = this;
    const wrapped = function (this: unknown, cb: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) {
      const token = {};
      self.existing.add(new WeakRef(token));
      const t = real(
        (...a: unknown[]) => {
          if (self.holding && self.held.has(token)) {
            self.skipped++;
            return;
          }
          cb(...a);
        },
        ms,
        ...args,
      );
      return t;
    } as unknown as typeof setInterval;
    globalThis.setInterval = Object.assign(wrapped, real);
  }

  hold(): void {
    this.held = new WeakSet();
    for (const r of this.existing) {
      const t = r.deref();
      if (t) this.held.add(t);
      else this.existing.delete(r);
    }
    this.holding = true;
  }

  release(): void {
    this.holding = false;
  }
}
