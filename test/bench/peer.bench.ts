/**
 * tollgate against a peer AI gateway that meters nothing, on the same instant upstream, in one run.
 *
 *   npm run bench:peer                      # prints a markdown table (about 3 minutes)
 *   npm run bench:peer -- --write           # also replaces "## Peer gateway" in docs/BENCHMARKS.md
 *   options: --duration <s> (8) --connections <n> (10) --rounds <n> (2) --ttfc <n> (100) --no-split
 *            --baseline <dir>: also measure the tollgate checked out in <dir> (its own src, same
 *            node_modules), side by side: before/after figures for a change in one run
 *            --cpu-prof <dir>: tollgate processes write V8 CPU profiles there (node --cpu-prof)
 *
 * Each target runs in its own child process and stays up for the whole run; the rounds alternate
 * the targets, so a change in the machine's other load hits all of them alike:
 *   - upstream: an instant OpenAI-compatible server (a fixed reply, JSON or SSE, no model time);
 *   - Portkey: `@portkey-ai/gateway` (NODE_ENV=production, --headless) routed to that upstream by
 *     the x-portkey-provider / x-portkey-custom-host headers;
 *   - tollgate: `MODEL_BACKEND=openai` on that upstream, all roles in one process (like `npm start`,
 *     every module, SQLite file on disk with synchronous=FULL), non-streaming and streaming;
 *   - tollgate split: `--role api` in one process, `--role projector` in another, same file and Redis.
 * Reports requests/s, p50, p99, the ratio to Portkey and to the upstream, the time to the first
 * streamed chunk (sequential requests) and the peak RSS (VmHWM) of each tollgate api process.
 */
import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { loadConfig } from '../../src/platform/config';
import { start } from '../../src/main';
import { seedFundedKey } from '../inference/int/support/seed';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { numberArg, percentile, replaceDocSection, timeToFirstChunk } from './bench-http';

const REPLY = 'Hello! This is the instant benchmark upstream: a fixed reply, no model time at all.';
const TOLLGATE_PATH = '/external/api/inference/openai/v1/chat/completions';

const messages = [
  { role: 'system', content: 'Answer in one sentence.' },
  // A different question each time (autocannon's idReplacement): no cache helps anyone.
  { role: 'user', content: 'Hi! Could you tell me what the weather is usually like in spring? (request [<id>])' },
];
const body = (model: string, stream: boolean) => JSON.stringify({ model, messages, max_tokens: 64, ...(stream ? { stream } : {}) });

// ---------------------------------------------------------------- children

/** The instant OpenAI-compatible upstream. */
function serveUpstream(): void {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const streamed = chunk({ role: 'assistant', content: '' }, null) + chunk({ content: REPLY }, null) + chunk({}, 'stop') + 'data: [DONE]\n\n';
  const whole = JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created,
    model: 'bench',
    choices: [{ index: 0, message: { role: 'assistant', content: REPLY }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 20, completion_tokens: 18, total_tokens: 38 },
  });
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      let stream = false;
      try {
        stream = (JSON.parse(Buffer.concat(parts).toString()) as { stream?: boolean }).stream === true;
      } catch {
        res.writeHead(400).end();
        return;
      }
      if (stream) res.writeHead(200, { 'content-type': 'text/event-stream' }).end(streamed);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(whole);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 })}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}

/** tollgate on the upstream; `role` all (one process) or api / projector (the split layout). */
async function serveTollgate(upstream: string, dataDir: string, prefix: string, role: string): Promise<void> {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    REDIS_PREFIX: prefix,
    ROLE: role,
    SWEEPER_ENABLED: 'false',
    MODEL_BACKEND: 'openai',
    OPENAI_BASE_URL: `${upstream}/v1`,
    OPENAI_API_KEY: 'sk-bench',
  });
  const running = await start(config);
  const stop = async () => {
    await running.close().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  const secret = role === 'projector' ? 'none' : (await seedFundedKey(running.services, { usd: '1000000', rateLimit: 1_000_000_000 })).secret;
  process.stdout.write(`${JSON.stringify({ port: running.port ?? 0, secret })}\n`);
}

// ---------------------------------------------------------------- parent

interface Proc {
  child: ChildProcess;
  port: number;
  secret: string;
}

interface Target {
  name: string;
  proc: () => Proc;
  path: string;
  headers: () => Record<string, string>;
  body: string;
  stream: boolean;
  /** Report peak RSS of this process. */
  rss?: boolean;
}

interface Run {
  /** CPU time of the target's process (user + system, all its threads) per request, ms. */
  cpuMs: number;
  rps: number;
  p50: number;
  p99: number;
  bad: number;
}

const children: ChildProcess[] = [];

async function launch(name: string, cmd: string[], env: NodeJS.ProcessEnv = process.env, ready?: RegExp): Promise<Proc> {
  const child = spawn(process.execPath, cmd, { stdio: ['ignore', 'pipe', 'inherit'], env });
  children.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (l) => {
      if (!ready || ready.test(l)) resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
  child.stdout!.resume();
  if (ready) return { child, port: 0, secret: 'none' };
  const { port, secret } = JSON.parse(line) as { port: number; secret?: string };
  return { child, port, secret: secret ?? 'none' };
}

const profAt = process.argv.indexOf('--cpu-prof');
const profiling = profAt > 0 ? ['--cpu-prof', `--cpu-prof-dir=${process.argv[profAt + 1]}`] : [];
const self = (...args: string[]) => [...process.execArgv, ...(args[0] === 'tollgate' ? profiling : []), __filename, '--serve', ...args];

function cannon(t: Target, seconds: number, connections: number): Promise<autocannon.Result> {
  const p = t.proc();
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${p.port}${t.path}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...t.headers() },
        body: t.body,
        idReplacement: true,
        connections,
        duration: seconds,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
}

function firstChunks(t: Target, n: number): Promise<number[]> {
  return timeToFirstChunk(`http://127.0.0.1:${t.proc().port}${t.path}`, t.headers(), (i) => t.body.replace('[<id>]', `[ttfc ${i}]`), n);
}

/** Latency of sequential requests on one keep-alive connection (ms, sorted). */
async function oneConnection(t: Target, n: number): Promise<number[]> {
  const p = t.proc();
  const pool = new Pool(`http://127.0.0.1:${p.port}`, { connections: 1 });
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const res = await pool.request({
        path: t.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...t.headers() },
        body: t.body.replace('[<id>]', `[seq ${i}]`),
      });
      await res.body.text();
      if (i >= 20) out.push(performance.now() - t0); // the first ones warm up
    }
  } finally {
    await pool.close();
  }
  return out.sort((a, b) => a - b);
}

/** CPU time (user + system, every thread) the process has used so far, ms. */
function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100; // USER_HZ on Linux

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const serve = process.argv.indexOf('--serve');
  if (serve > 0) {
    const [kind, ...rest] = process.argv.slice(serve + 1);
    if (kind === 'upstream') return serveUpstream();
    return serveTollgate(rest[0], rest[1], rest[2], rest[3]);
  }
  const seconds = numberArg('duration', 8);
  const connections = numberArg('connections', 10);
  const rounds = numberArg('rounds', 2);
  const ttfcN = numberArg('ttfc', 100);
  const split = !process.argv.includes('--no-split');
  const loadStart = loadavg();

  const upstream = await launch('upstream', self('upstream'));
  const upUrl = `http://127.0.0.1:${upstream.port}`;
  const portkeyPort = 20000 + Math.floor(Math.random() * 20000);
  const portkeyEntry = require.resolve('@portkey-ai/gateway/build/start-server.js', { paths: [process.cwd()] });
  const portkey = await launch(
    'portkey',
    [portkeyEntry, `--port=${portkeyPort}`, '--headless'],
    { ...process.env, NODE_ENV: 'production' },
    /Ready for connections/,
  );
  portkey.port = portkeyPort;
  const dirs: string[] = [];
  const prefixes: string[] = [];
  const tollgate = async (role: string, dataDir?: string, prefix?: string) => {
    const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'tollgate-bench-peer-'));
    const px = prefix ?? uniquePrefix("benchpeer");
    if (!dataDir) dirs.push(dir);
    if (!prefix) prefixes.push(px);
    return { proc: await launch(`tollgate ${role}`, self('tollgate', upUrl, dir, px, role)), dir, prefix: px };
  };
  const all = await tollgate('all');
  const baselineAt = process.argv.indexOf('--baseline');
  const baselineDir = baselineAt > 0 ? process.argv[baselineAt + 1] : undefined;
  let baseline: Proc | undefined;
  if (baselineDir) {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-peer-'));
    const px = uniquePrefix('benchpeer');
    dirs.push(dir);
    prefixes.push(px);
    const entry = join(baselineDir, 'test/bench/peer.bench.ts');
    baseline = await launch('baseline', [...process.execArgv, ...profiling, entry, '--serve', 'tollgate', upUrl, dir, px, 'all']);
  }
  let splitApi: Proc | undefined;
  if (split) {
    const projector = await tollgate('projector');
    splitApi = (await tollgate('api', projector.dir, projector.prefix)).proc;
  }

  const portkeyHeaders = () => ({
    authorization: 'Bearer sk-bench',
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${upUrl}/v1`,
  });
  const tgHeaders = (p: Proc) => () => ({ authorization: `Bearer ${p.secret}` });
  const targets: Target[] = [
    { name: 'upstream alone', proc: () => upstream, path: '/v1/chat/completions', headers: () => ({}), body: body('bench', false), stream: false },
    { name: 'Portkey gateway', proc: () => portkey, path: '/v1/chat/completions', headers: portkeyHeaders, body: body('bench', false), stream: false },
    {
      name: 'tollgate (all roles, one process)',
      proc: () => all.proc,
      path: TOLLGATE_PATH,
      headers: tgHeaders(all.proc),
      body: body('service_3_pi', false),
      stream: false,
      rss: true,
    },
    ...(baseline
      ? [
          {
            name: `baseline: ${baselineDir} (all roles, one process)`,
            proc: () => baseline!,
            path: TOLLGATE_PATH,
            headers: tgHeaders(baseline),
            body: body('service_3_pi', false),
            stream: false,
            rss: true,
          },
        ]
      : []),
    ...(splitApi
      ? [
          {
            name: 'tollgate split (api process; projector apart)',
            proc: () => splitApi!,
            path: TOLLGATE_PATH,
            headers: tgHeaders(splitApi),
            body: body('service_3_pi', false),
            stream: false,
            rss: true,
          },
        ]
      : []),
    { name: 'Portkey gateway, streaming', proc: () => portkey, path: '/v1/chat/completions', headers: portkeyHeaders, body: body('bench', true), stream: true },
    {
      name: 'tollgate, streaming',
      proc: () => all.proc,
      path: TOLLGATE_PATH,
      headers: tgHeaders(all.proc),
      body: body('service_3_pi', true),
      stream: true,
    },
  ];

  // Portkey 1.15.2 answers a streamed pass-through with HTTP 500 on some Node versions (it appends
  // headers to fetch's immutable Response headers): measure it only where it works.
  const notes: string[] = [];
  const pkStream = targets.findIndex((t) => t.name === 'Portkey gateway, streaming');
  const probe = await fetch(`http://127.0.0.1:${portkey.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...portkeyHeaders() },
    body: body('bench', true),
  });
  const probeText = await probe.text();
  if (probe.status !== 200 || !probeText.includes('data: ')) {
    targets.splice(pkStream, 1);
    notes.push(
      `Portkey streaming was not measured: it answered HTTP ${probe.status} on Node ${process.version} ` +
        `(${probeText.slice(0, 80)}); tollgate streaming is compared with Portkey non-streaming.`,
    );
  }
  const runs: Run[][] = targets.map(() => []);
  const ttfc = new Map<Target, number[]>();
  try {
    for (const t of targets) await cannon(t, 1, connections); // warm-up: JIT, connection pools
    for (let r = 0; r < rounds; r++) {
      for (const [i, t] of targets.entries()) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${t.name} …\n`);
        const pid = t.proc().child.pid!;
        const cpu0 = cpuTimeMs(pid);
        const res = await cannon(t, seconds, connections);
        const cpuMs = (cpuTimeMs(pid) - cpu0) / Math.max(1, res.requests.total);
        runs[i].push({ cpuMs, rps: res.requests.average, p50: res.latency.p50, p99: res.latency.p99, bad: res.non2xx + res.errors });
      }
    }
    for (const t of targets.filter((x) => x.stream)) ttfc.set(t, await firstChunks(t, ttfcN));
    const single = new Map<Target, number[]>();
    const singleCpu = new Map<Target, number>();
    for (const t of targets.filter((x) => !x.stream)) {
      const pid = t.proc().child.pid!;
      const cpu0 = cpuTimeMs(pid);
      single.set(t, await oneConnection(t, ttfcN + 20));
      singleCpu.set(t, (cpuTimeMs(pid) - cpu0) / (ttfcN + 20));
    }
    const rss = new Map(targets.filter((t) => t.rss).map((t) => [t, peakRssMb(t.proc().child.pid!)]));
    const loadEnd = loadavg();

    const agg = runs.map((rs) => ({ cpuMs: mean(rs.map((x) => x.cpuMs)), rps: mean(rs.map((x) => x.rps)), p50: mean(rs.map((x) => x.p50)), p99: mean(rs.map((x) => x.p99)), bad: rs.reduce((a, x) => a + x.bad, 0) }));
    const portkeyOf = (t: Target) => {
      const i = targets.findIndex((x) => x.name === 'Portkey gateway, streaming');
      return agg[t.stream && i >= 0 ? i : targets.findIndex((x) => x.name === 'Portkey gateway')];
    };
    const up = agg[0];
    const f = (n: number, d = 2) => n.toFixed(d);
    const rows = targets.map((t, i) => {
      const a = agg[i];
      const pk = portkeyOf(t);
      const first = ttfc.get(t);
      const one = single.get(t);
      const upOne = percentile(single.get(targets[0])!, 50);
      const oneCell = one ? `${f(percentile(one, 50), 3)}${t === targets[0] ? '' : ` (+${f(percentile(one, 50) - upOne, 3)})`}` : '—';
      return `| ${t.name} | ${Math.round(a.rps)} | ${f(a.rps / pk.rps)}× | ${f(a.rps / up.rps, 3)}× | ${f(a.p50)} | ${f(a.p99)} | ${oneCell} | ${first ? `${f(percentile(first, 50))} / ${f(percentile(first, 99))}` : '—'} | ${rss.has(t) ? Math.round(rss.get(t)!) : '—'} | ${f(a.cpuMs, 3)}${singleCpu.has(t) ? ` (1 conn. ${f(singleCpu.get(t)!, 3)})` : ''} | ${a.bad} |`;
    });
    const table = [
      `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}; ` +
        `autocannon, ${connections} connections, ${seconds} s per round, the mean of ${rounds} alternating rounds after a 1 s warm-up each; ` +
        `instant upstream (fixed reply); the ratio columns compare streaming targets with Portkey streaming where it was measured. ` +
        `First chunk: ${ttfcN} sequential streaming requests; 1 connection: ${ttfcN} sequential requests on one keep-alive connection (after 20 unmeasured). Latencies in ms; peak RSS is the process's VmHWM at the end; CPU per request is the target process's user + system time (all its threads) over the requests it answered under load, which the machine's other load disturbs far less than requests/s. ` +
        `Load average (1/5/15 min) at the start ${loadStart.map((x) => x.toFixed(2)).join(' / ')}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' / ')}.`,
      '',
      '| target | requests/s | vs Portkey | vs upstream | p50 | p99 | 1 connection p50 (added to upstream) | first chunk p50 / p99 | peak RSS MB | CPU ms per request | non-2xx + errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      ...(notes.length ? ['', ...notes] : []),
    ].join('\n');
    process.stdout.write(`${table}\n`);
    if (process.argv.includes('--write')) writeSection(table);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const p of prefixes) await cleanupPrefix(TEST_REDIS_URL, p).catch(() => undefined);
  }
}

function writeSection(table: string): void {
  replaceDocSection('Peer gateway', `\`npm run bench:peer\` (test/bench/peer.bench.ts).\n\n${table}\n`);
}

main().catch((err) => {
  process.stderr.write(`peer bench failed: ${(err as Error).stack ?? err}\n`);
  for (const c of children) c.kill('SIGTERM');
  process.exit(1);
});
