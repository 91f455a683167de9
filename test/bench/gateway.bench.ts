/**
 * Gateway overhead: autocannon against POST /external/api/inference with an instant backend (a
 * fixed reply, no model time), the full engine (auth, rate limit, validation, tokenization,
 * reservation, two event appends, the projector in the same process) against a bare pass-through
 * (same route, same backend: parse the body, call the backend, answer; no auth, limits or
 * metering), in one run. Reports requests/s and the ratio, p50/p99 latency and what the engine
 * adds, and the time to the first streamed chunk.
 *
 *   npm run bench:gateway                      # prints a markdown table
 *   npm run bench:gateway -- --write           # also replaces "## Gateway" in docs/BENCHMARKS.md
 *   options: --duration <s> (10) --connections <n> (10) --ttfc <n> (300) --rounds <n> (2)
 *            --baseline <dir>: also measure the engine (on disk) of the tollgate checked out in <dir>
 *            (its own src, same node_modules), side by side: before/after figures in one run
 *
 * Each server runs in its own child process (autocannon gets the parent's core). The engine is
 * measured twice: with its SQLite file on tmpfs (/dev/shm: fsync is free, so what remains is the
 * gateway's own work) and on disk (synchronous=FULL: every append waits for an fsync).
 */
import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import express from 'express';
import { createInferenceModule } from '../../src/inference/module';
import { loadConfig } from '../../src/platform/config';
import type { BackendFinish, GenerateParams, ModelBackend } from '../../src/inference/backend';
import { start } from '../../src/main';
import { hotPathReadModels } from '../support/hot-path';
import { seedFundedKey } from '../inference/int/support/seed';
import { numberArg, percentile, replaceDocSection, timeToFirstChunk } from './bench-http';
import { cleanupPrefix, uniquePrefix } from '../support/redis';

const REPLY = 'Hello! This is the instant benchmark backend: a fixed reply, no model time at all.';

/** The instant backend: the whole reply in one chunk, at once. */
class InstantBackend implements ModelBackend {
  readonly kind = 'instant';
  modelName() {
    return 'instant';
  }
  async *generate(_p: GenerateParams): AsyncGenerator<string, BackendFinish, undefined> {
    yield REPLY;
    return 'stop';
  }
}

const BODY = JSON.stringify({
  context: [
    { type: 'Instruction', text: 'Answer in one sentence.' },
    // A different question each time (autocannon's idReplacement): the tokenizer's cache does not help.
    { type: 'Human', text: 'Hi! Could you tell me what the weather is usually like in spring? (request [<id>])' },
  ],
  config: 'service_3_pi',
  max_tokens: 64,
  web_search: false,
});

// ---------------------------------------------------------------- child: one server

async function serveEngine(dataDir: string): Promise<void> {
  const prefix = uniquePrefix('bench');
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    REDIS_PREFIX: prefix,
    SWEEPER_ENABLED: 'false',
  });
  const running = await start(config, {
    modules: [hotPathReadModels, createInferenceModule({ backend: new InstantBackend(), search: null })],
  });
  const key = await seedFundedKey(running.services, { usd: '1000000', rateLimit: 1_000_000_000 });
  const stop = async () => {
    await running.close().catch(() => undefined);
    await cleanupPrefix(config.REDIS_URL, prefix).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.stdout.write(`${JSON.stringify({ port: running.port, secret: key.secret })}\n`);
}

async function servePassThrough(): Promise<void> {
  const backend = new InstantBackend();
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '2mb' }));
  const generate = (body: { context?: Array<{ text?: string }> }) =>
    backend.generate({
      config: 'service_3_pi',
      prompt: { text: (body.context ?? []).map((e) => e.text ?? '').join('\n'), segments: [], messages: [], lastHuman: '' },
      temperature: 1,
      topP: 0.95,
      maxTokens: 64,
      stop: [],
      seed: 1,
      signal: new AbortController().signal,
    });
  app.post('/external/api/inference', async (req, res) => {
    let text = '';
    for await (const t of generate(req.body)) text += t;
    res.json({ created: Date.now() / 1000, text });
  });
  app.post('/external/api/inference/streaming', async (req, res) => {
    res.status(200).setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.flushHeaders();
    let idx = 0;
    for await (const text of generate(req.body)) {
      res.write(`data: ${JSON.stringify({ created: Date.now() / 1000, idx, index: idx, text })}\n\n`);
      idx++;
    }
    res.end();
  });
  const server = app.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0, secret: 'none' })}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

// ---------------------------------------------------------------- parent: the measurements

interface Target {
  name: string;
  args: string[];
  /** The bench file that serves it (default: this one). */
  script?: string;
}

interface Measured {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  ttfcP50: number;
  ttfcP99: number;
}

async function launch(t: Target): Promise<{ child: ChildProcess; port: number; secret: string }> {
  const child = spawn(process.execPath, [...process.execArgv, t.script ?? __filename, '--serve', ...t.args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${t.name} exited with ${code}`)));
  });
  const { port, secret } = JSON.parse(line) as { port: number; secret: string };
  return { child, port, secret };
}

function cannon(url: string, secret: string, seconds: number, connections: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `${url}/external/api/inference`,
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: BODY,
        idReplacement: true,
        connections,
        duration: seconds,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
}

async function measure(t: Target, seconds: number, connections: number, ttfcN: number): Promise<Measured> {
  const { child, port, secret } = await launch(t);
  const url = `http://127.0.0.1:${port}`;
  try {
    await cannon(url, secret, 2, connections); // warm-up
    const r = await cannon(url, secret, seconds, connections);
    const ttfc = await timeToFirstChunk(
      `${url}/external/api/inference/streaming`,
      { authorization: `Bearer ${secret}` },
      () => BODY,
      ttfcN,
    );
    return {
      name: t.name,
      rps: r.requests.average,
      p50: r.latency.p50,
      p99: r.latency.p99,
      non2xx: r.non2xx,
      errors: r.errors,
      ttfcP50: percentile(ttfc, 50),
      ttfcP99: percentile(ttfc, 99),
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

function report(results: Measured[], opts: { seconds: number; connections: number; ttfcN: number; load: number; rounds: number }): string {
  const base = results[0];
  const f = (n: number, d = 2) => n.toFixed(d);
  const rows = results.map((m) =>
    m === base
      ? `| ${m.name} | ${Math.round(m.rps)} | — | ${f(m.p50)} | ${f(m.p99)} | — | — | ${f(m.ttfcP50)} / ${f(m.ttfcP99)} | ${m.non2xx + m.errors} |`
      : `| ${m.name} | ${Math.round(m.rps)} | ${f((100 * m.rps) / base.rps, 1)}% | ${f(m.p50)} | ${f(m.p99)} | +${f(m.p50 - base.p50)} | +${f(m.p99 - base.p99)} | ${f(m.ttfcP50)} / ${f(m.ttfcP99)} | ${m.non2xx + m.errors} |`,
  );
  return [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}; ` +
      `autocannon, ${opts.connections} connections, ${opts.seconds} s after a 2 s warm-up, the mean of ${opts.rounds} alternating rounds; ` +
      `instant backend (fixed reply, no model time); ` +
      `time to first chunk: ${opts.ttfcN} sequential streaming requests. Latencies in ms. ` +
      `Load average when the run started: ${opts.load.toFixed(1)} (other work on the machine competes for its cores).`,
    '',
    '| target | requests/s | vs pass-through | p50 | p99 | added p50 | added p99 | first chunk p50 / p99 | non-2xx + errors |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

const NOTES = `Targets (not asserted): the engine on disk at 40% or more of the pass-through's requests/s,
and an added p50 under 1 ms at one connection (bench:peer measures that one). What bounds the engine
(CPU profile under this load, docs/BENCHMARKS.md "## Peer gateway"): the engine is CPU-bound on one
core, and its per-request CPU goes to Express and its routing (~12%), the Redis client (~14%), the
tokenizer (~12%), the projector applying the request's events in the same process (~12%), GC (~8%).
The event store's fsync no longer blocks the event loop: appends are written by a worker thread with
group commit (one fsync per batch), so the disk decides latency, not throughput.`;

function writeSection(table: string): void {
  replaceDocSection('Gateway', `\`npm run bench:gateway\` (test/bench/gateway.bench.ts).\n\n${table}\n\n${NOTES}\n`);
}

async function main(): Promise<void> {
  const serve = process.argv.indexOf('--serve');
  if (serve > 0) {
    const kind = process.argv[serve + 1];
    if (kind === 'bare') return servePassThrough();
    return serveEngine(mkdtempSync(join(process.argv[serve + 2], 'tollgate-bench-gw-')));
  }
  const seconds = numberArg('duration', 10);
  const connections = numberArg('connections', 10);
  const ttfcN = numberArg('ttfc', 300);
  const targets: Target[] = [
    { name: 'pass-through (no auth, limits or metering)', args: ['bare'] },
    ...(existsSync('/dev/shm') ? [{ name: 'engine, SQLite on tmpfs', args: ['engine', '/dev/shm'] }] : []),
    { name: 'engine, SQLite on disk (synchronous=FULL)', args: ['engine', tmpdir()] },
  ];
  const baselineAt = process.argv.indexOf('--baseline');
  if (baselineAt > 0) {
    const dir = process.argv[baselineAt + 1];
    targets.push({
      name: `baseline ${dir}: engine, SQLite on disk`,
      args: ['engine', tmpdir()],
      script: join(dir, 'test/bench/gateway.bench.ts'),
    });
  }
  const rounds = numberArg('rounds', 2);
  const load = loadavg()[0];
  // Rounds alternate the targets, so a change in the machine's other load hits all of them alike.
  const runs: Measured[][] = targets.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [i, t] of targets.entries()) {
      process.stderr.write(`round ${r + 1}/${rounds}: measuring ${t.name} …\n`);
      runs[i].push(await measure(t, seconds, connections, Math.ceil(ttfcN / rounds)));
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const results: Measured[] = runs.map((ms) => ({
    name: ms[0].name,
    rps: mean(ms.map((m) => m.rps)),
    p50: mean(ms.map((m) => m.p50)),
    p99: mean(ms.map((m) => m.p99)),
    non2xx: ms.reduce((a, m) => a + m.non2xx, 0),
    errors: ms.reduce((a, m) => a + m.errors, 0),
    ttfcP50: mean(ms.map((m) => m.ttfcP50)),
    ttfcP99: mean(ms.map((m) => m.ttfcP99)),
  }));
  const table = report(results, { seconds, connections, ttfcN, load, rounds });
  process.stdout.write(`${table}\n`);
  if (process.argv.includes('--write')) writeSection(table);
}

main().catch((err) => {
  process.stderr.write(`gateway bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
