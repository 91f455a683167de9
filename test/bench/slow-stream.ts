/**
 * The slow-stream scenario of bench:peer: an upstream that streams 60 chunks 10 ms apart, and a
 * driver that keeps N streaming clients busy (closed loop) against a gateway.
 */
import { Agent, createServer, request } from 'node:http';
import { readFileSync } from 'node:fs';

export const SLOW_CHUNKS = 60;
export const SLOW_GAP_MS = 10;

/**
 * The slow OpenAI-compatible upstream: every request is streamed, SLOW_CHUNKS chunks (one word
 * each, the first at once) SLOW_GAP_MS apart, then the finish chunk and [DONE]. One 1 ms ticker
 * serves every open stream (each stream keeps the phase of its arrival in a 10-slot wheel), so
 * the upstream's own cost stays small and chunks of different streams do not arrive in bursts.
 */
export function serveSlowUpstream(): void {
  const created = Math.floor(Date.now() / 1000);
  const frame = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-slow', object: 'chat.completion.chunk', created, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const words = Array.from({ length: SLOW_CHUNKS }, (_, i) => ` word${i % 10}`);
  const first = frame({ role: 'assistant', content: 'Hello' }, null);
  const middle = words.map((w) => frame({ content: w }, null));
  const last = frame({}, 'stop') + 'data: [DONE]\n\n';
  interface Open {
    res: import('node:http').ServerResponse;
    sent: number;
  }
  const wheel: Set<Open>[] = Array.from({ length: SLOW_GAP_MS }, () => new Set());
  let slot = Math.floor(performance.now());
  setInterval(() => {
    const now = Math.floor(performance.now());
    for (; slot <= now; slot++) {
      for (const o of wheel[slot % SLOW_GAP_MS]) {
        if (o.res.destroyed) {
          wheel[slot % SLOW_GAP_MS].delete(o);
          continue;
        }
        // `first` carried the first word; SLOW_CHUNKS - 1 more, then the finish chunk with [DONE].
        o.sent++;
        if (o.sent < SLOW_CHUNKS) o.res.write(middle[o.sent]);
        else {
          o.res.end(last);
          wheel[slot % SLOW_GAP_MS].delete(o);
        }
      }
    }
  }, 1);
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(first);
      // The slot just behind the current one: its next visit is SLOW_GAP_MS - 1 to SLOW_GAP_MS ms away.
      wheel[(Math.floor(performance.now()) + SLOW_GAP_MS - 1) % SLOW_GAP_MS].add({ res, sent: 0 });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 })}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

export interface SlowTarget {
  port: number;
  path: string;
  headers: Record<string, string>;
  /** The body of request i. */
  body: (i: number) => string;
  /** Processes whose CPU (user + system) and RSS are measured. */
  pids: number[];
}

export interface SlowRun {
  /** Streams that ended with [DONE], per second from the window's start until the last one ended. */
  streamsPerSec: number;
  completed: number;
  /** Streams that did not end with a 200 and [DONE], and why (the first few reasons, counted). */
  failed: number;
  failures: Record<string, number>;
  /** CPU ms per completed stream, per measured process, from the window's start until every stream ended. */
  cpuMsPerStream: number[];
  /** Whole-stream latency and time to first chunk under load, ms. */
  p50: number;
  p99: number;
  firstChunkP50: number;
  firstChunkP99: number;
  /** RSS of each measured process: before the run (idle) and the highest sampled during it, MB. */
  idleRssMb: number[];
  peakRssMb: number[];
  /** The highest number of streams open at once. */
  maxOpen: number;
}

const DONE = Buffer.from('data: [DONE]\n\n');
const DATA = Buffer.from('data: ');

interface StreamTimes {
  ok: boolean;
  /** Why a stream failed: its status, or the last bytes it ended with, or the socket error. */
  why?: string;
  firstMs: number;
  totalMs: number;
  end: number;
}

/** `answered` is called once: when the response's headers arrive, or when the request fails before. */
function oneStream(agent: Agent, t: SlowTarget, i: number, answered: () => void = () => undefined): Promise<StreamTimes> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let firstMs = -1;
    let tail = Buffer.alloc(0);
    const fail = (err: Error) => {
      answered();
      resolve({ ok: false, why: err.message, firstMs, totalMs: performance.now() - t0, end: performance.now() });
    };
    const payload = t.body(i);
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port: t.port,
        path: t.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...t.headers },
      },
      (res) => {
        answered();
        res.on('data', (c: Buffer) => {
          if (firstMs < 0 && c.includes(DATA)) firstMs = performance.now() - t0;
          // Only the end matters: is the last frame [DONE]?
          tail = tail.length + c.length > 64 ? Buffer.concat([tail, c]).subarray(-32) : Buffer.concat([tail, c]);
        });
        res.on('end', () => {
          const end = performance.now();
          const ok = res.statusCode === 200 && tail.subarray(-DONE.length).equals(DONE);
          const why = ok
            ? undefined
            : res.statusCode !== 200
              ? `HTTP ${res.statusCode}`
              : `ended with ${JSON.stringify(tail.toString().slice(-24))}`;
          resolve({ ok, why, firstMs, totalMs: end - t0, end });
        });
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(payload);
  });
}

/** CPU time (user + system, every thread) the process has used so far, ms. */
export function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100; // USER_HZ on Linux

/** Whether the process's main thread is running or waiting for a core (state R), not sleeping. */
export function isRunnable(pid: number): boolean {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('R');
}

export function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;

/**
 * How many clients may wait at once for the answer to their first request, i.e. for a connection
 * the gateway has not yet been seen to accept. Below Node's listen backlog (511): 1,000 connections
 * opened at once overflow the kernel's accept queue whenever the gateway is slow to accept (a starved
 * process at load 17-40); with net.ipv4.tcp_abort_on_overflow=0 the kernel keeps such a connection
 * half-open, re-sends its SYN-ACK 5 times (about 60 s), then drops it, and the client's next
 * segment is answered with a RST: `read ECONNRESET` after 35-120 s, on a fresh connection, before
 * any response (docs/BENCHMARKS.md, "bench:peer's ECONNRESET at 1,000 slow streams"). Measured: a
 * load generator, not the gateway, was losing those streams.
 */
export const MAX_OPENING = 256;

/** A counting gate: at most `n` holders at once, the others wait in order. */
function gate(n: number) {
  let free = n;
  const waiting: Array<() => void> = [];
  return {
    async enter(): Promise<() => void> {
      if (free > 0) free--;
      else await new Promise<void>((r) => waiting.push(r));
      let left = false;
      return () => {
        if (left) return;
        left = true;
        const next = waiting.shift();
        if (next) next();
        else free++;
      };
    },
  };
}

/**
 * Keeps `concurrency` streams open for `seconds` (each client sends its next request when its
 * stream ends), then lets the open ones finish. A client's first request (a new connection) waits
 * for one of MAX_OPENING places, held until its answer starts. RSS is sampled every 100 ms.
 */
export async function driveSlowStreams(t: SlowTarget, concurrency: number, seconds: number, maxOpening = MAX_OPENING): Promise<SlowRun> {
  const opening = gate(maxOpening);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const idleRssMb = t.pids.map((p) => rssMb(p));
  const peakRssMb = [...idleRssMb];
  const sampler = setInterval(() => t.pids.forEach((p, k) => (peakRssMb[k] = Math.max(peakRssMb[k], rssMb(p)))), 100);
  const cpu0 = t.pids.map(cpuTimeMs);
  const start = performance.now();
  const until = start + seconds * 1000;
  const times: StreamTimes[] = [];
  let next = 0;
  let open = 0;
  let maxOpen = 0;
  const client = async () => {
    // The first request opens this client's connection (the agent keeps it for the next ones); it
    // is sent even when the window has passed while it waited, so every client streams at least once.
    let answered: (() => void) | undefined = await opening.enter();
    do {
      open++;
      maxOpen = Math.max(maxOpen, open);
      times.push(await oneStream(agent, t, next++, answered));
      answered = undefined;
      open--;
    } while (performance.now() < until);
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, client));
  } finally {
    clearInterval(sampler);
    agent.destroy();
  }
  const cpu = t.pids.map((p, k) => cpuTimeMs(p) - cpu0[k]);
  const elapsedS = (performance.now() - start) / 1000;
  const good = times.filter((x) => x.ok);
  const total = good.map((x) => x.totalMs).sort((a, b) => a - b);
  const first = good.map((x) => x.firstMs).sort((a, b) => a - b);
  return {
    streamsPerSec: good.length / elapsedS,
    completed: good.length,
    failed: times.length - good.length,
    failures: times.reduce<Record<string, number>>((acc, x) => (x.why ? { ...acc, [x.why]: (acc[x.why] ?? 0) + 1 } : acc), {}),
    cpuMsPerStream: cpu.map((c) => c / Math.max(1, good.length)),
    p50: pct(total, 50),
    p99: pct(total, 99),
    firstChunkP50: pct(first, 50),
    firstChunkP99: pct(first, 99),
    idleRssMb,
    peakRssMb,
    maxOpen,
  };
}

/** Time to the first chunk of `n` sequential streams on one keep-alive connection (after 10 unmeasured), ms sorted. */
export async function slowFirstChunks(t: SlowTarget, n: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const out: number[] = [];
  try {
    for (let i = 0; i < n + 10; i++) {
      const r = await oneStream(agent, t, 1_000_000 + i);
      if (!r.ok) throw new Error(`a stream failed on port ${t.port}`);
      if (i >= 10) out.push(r.firstMs);
    }
  } finally {
    agent.destroy();
  }
  return out.sort((a, b) => a - b);
}
