/**
 * tollgate against a peer AI gateway that meters nothing, on the same instant upstream, in one run.
 *
 *   npm run bench:peer                      # prints two markdown tables (about 6 minutes)
 *   npm run bench:peer -- --write           # also replaces "## Peer gateway" in docs/BENCHMARKS.md
 *   options: --duration <s> (8) --connections <n> (10) --rounds <n> (2) --ttfc <n> (100) --no-split
 *            --slow <n,n> (200,1000): the slow-stream scenario's concurrent streams; --slow 0 skips it
 *            --slow-duration <s> (10) --slow-ttfc <n> (20) --only-slow: the slow-stream scenario alone
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
 *
 * The slow-stream scenario (./slow-stream.ts): an upstream streaming 60 chunks 10 ms apart, N
 * streaming clients at once on the OpenAI route of Portkey and of a tollgate (all roles) on that
 * upstream, alternating rounds. The clients open their connections at most 256 at a time (each
 * waits until its first answer starts): 1,000 at once overflowed the listen backlog (511) of a
 * starved gateway, and the kernel reset ~8% of them after 35-120 s (slow-stream.ts, MAX_OPENING).
 * It reports completed streams/s, CPU ms per stream of each gateway process, p50/p99, time to
 * first chunk under load and at 1 connection, and RSS idle and at peak.
 * Portkey runs with ./portkey-headers-shim.cjs preloaded: without it 1.15.2 fails every streamed
 * reply on Node 20 (`TypeError: immutable`).
 */
import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { loadConfig } from '../../src/platform/config';
import { start } from '../../src/main';
import { seedFundedKey } from '../inference/int/support/seed';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { numberArg, percentile, replaceDocSection, timeToFirstChunk, waitForIdle } from './bench-http';
import { cpuTimeMs, driveSlowStreams, MAX_OPENING, rssMb, serveSlowUpstream, slowFirstChunks, SlowRun, SlowTarget } from './slow-stream';

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
  const streamed =
    chunk({ role: 'assistant', content: '' }, null) + chunk({ content: REPLY }, null) + chunk({}, 'stop') + 'data: [DONE]\n\n';
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
      let stream: boolean;
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
  const secret =
    role === 'projector' ? 'none' : (await seedFundedKey(running.services, { usd: '1000000', rateLimit: 1_000_000_000 })).secret;
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

const peakRssMb = (pid: number) => rssMb(pid, 'VmHWM');

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const serve = process.argv.indexOf('--serve');
  if (serve > 0) {
    const [kind, ...rest] = process.argv.slice(serve + 1);
    if (kind === 'upstream') return serveUpstream();
    if (kind === 'slow-upstream') return serveSlowUpstream();
    return serveTollgate(rest[0], rest[1], rest[2], rest[3]);
  }
  const portkey = await launchPortkey();
  const tables: string[] = [];
  try {
    if (!process.argv.includes('--only-slow')) tables.push(await instantScenario(portkey));
    const levels = (process.argv.includes('--slow') ? process.argv[process.argv.indexOf('--slow') + 1] : '200,1000')
      .split(',')
      .map(Number)
      .filter((n) => n > 0);
    if (levels.length) tables.push(await slowScenario(portkey, levels));
    const text = tables.join('\n\n');
    process.stdout.write(`${text}\n`);
    if (process.argv.includes('--write')) writeSection(text);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const p of prefixes) await cleanupPrefix(TEST_REDIS_URL, p).catch(() => undefined);
  }
}

async function launchPortkey(): Promise<Proc> {
  const portkeyPort = 20000 + Math.floor(Math.random() * 20000);
  const portkeyEntry = require.resolve('@portkey-ai/gateway/build/start-server.js', { paths: [process.cwd()] });
  const portkey = await launch(
    'portkey',
    ['--require', join(__dirname, 'portkey-headers-shim.cjs'), portkeyEntry, `--port=${portkeyPort}`, '--headless'],
    { ...process.env, NODE_ENV: 'production' },
    /Ready for connections/,
  );
  portkey.port = portkeyPort;
  return portkey;
}

const dirs: string[] = [];
const prefixes: string[] = [];

/** A tollgate process on the upstream at `upUrl`; `role` all, api or projector (the latter two share `dataDir` and `prefix`). */
async function tollgate(upUrl: string, role: string, dataDir?: string, prefix?: string) {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'tollgate-bench-peer-'));
  const px = prefix ?? uniquePrefix('benchpeer');
  if (!dataDir) dirs.push(dir);
  if (!prefix) prefixes.push(px);
  return { proc: await launch(`tollgate ${role}`, self('tollgate', upUrl, dir, px, role)), dir, prefix: px };
}

const baselineDir = process.argv.includes('--baseline') ? process.argv[process.argv.indexOf('--baseline') + 1] : undefined;

/** The tollgate checked out in --baseline <dir> (all roles, one process), on the upstream at `upUrl`. */
async function baseline(upUrl: string): Promise<Proc | undefined> {
  if (!baselineDir) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-peer-'));
  const px = uniquePrefix('benchpeer');
  dirs.push(dir);
  prefixes.push(px);
  const entry = join(baselineDir, 'test/bench/peer.bench.ts');
  return launch('baseline', [...process.execArgv, ...profiling, entry, '--serve', 'tollgate', upUrl, dir, px, 'all']);
}

const portkeyHeadersFor = (upUrl: string) => () => ({
  authorization: 'Bearer sk-bench',
  'x-portkey-provider': 'openai',
  'x-portkey-custom-host': `${upUrl}/v1`,
});

/** The instant upstream, autocannon at --connections: requests/s, latency, CPU per request. */
async function instantScenario(portkey: Proc): Promise<string> {
  const seconds = numberArg('duration', 8);
  const connections = numberArg('connections', 10);
  const rounds = numberArg('rounds', 2);
  const ttfcN = numberArg('ttfc', 100);
  const split = !process.argv.includes('--no-split');
  const loadStart = loadavg();
  const upstream = await launch('upstream', self('upstream'));
  const upUrl = `http://127.0.0.1:${upstream.port}`;
  const all = await tollgate(upUrl, 'all');
  const base = await baseline(upUrl);
  let splitApi: Proc | undefined;
  if (split) {
    const projector = await tollgate(upUrl, 'projector');
    splitApi = (await tollgate(upUrl, 'api', projector.dir, projector.prefix)).proc;
  }

  const portkeyHeaders = portkeyHeadersFor(upUrl);
  const tgHeaders = (p: Proc) => () => ({ authorization: `Bearer ${p.secret}` });
  const targets: Target[] = [
    {
      name: 'upstream alone',
      proc: () => upstream,
      path: '/v1/chat/completions',
      headers: () => ({}),
      body: body('bench', false),
      stream: false,
    },
    {
      name: 'Portkey gateway',
      proc: () => portkey,
      path: '/v1/chat/completions',
      headers: portkeyHeaders,
      body: body('bench', false),
      stream: false,
    },
    {
      name: 'tollgate (all roles, one process)',
      proc: () => all.proc,
      path: TOLLGATE_PATH,
      headers: tgHeaders(all.proc),
      body: body('service_3_pi', false),
      stream: false,
      rss: true,
    },
    ...(base
      ? [
          {
            name: `baseline: ${baselineDir} (all roles, one process)`,
            proc: () => base,
            path: TOLLGATE_PATH,
            headers: tgHeaders(base),
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
    {
      name: 'Portkey gateway, streaming',
      proc: () => portkey,
      path: '/v1/chat/completions',
      headers: portkeyHeaders,
      body: body('bench', true),
      stream: true,
    },
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
  // Each sequential phase starts once its target has finished the work the load left it (tollgate's
  // in-process projector catching up): the phase measures one request at a time, not that backlog.
  const waited = new Map<string, number>();
  const idle = async (t: Target) => {
    const ms = await waitForIdle(t.proc().child.pid!);
    waited.set(t.name, Math.max(waited.get(t.name) ?? 0, ms));
  };
  for (const t of targets.filter((x) => x.stream)) {
    await idle(t);
    ttfc.set(t, await firstChunks(t, ttfcN));
  }
  const single = new Map<Target, number[]>();
  const singleCpu = new Map<Target, number>();
  for (const t of targets.filter((x) => !x.stream)) {
    await idle(t);
    const pid = t.proc().child.pid!;
    const cpu0 = cpuTimeMs(pid);
    single.set(t, await oneConnection(t, ttfcN + 20));
    singleCpu.set(t, (cpuTimeMs(pid) - cpu0) / (ttfcN + 20));
  }
  const rss = new Map(targets.filter((t) => t.rss).map((t) => [t, peakRssMb(t.proc().child.pid!)]));
  const loadEnd = loadavg();

  const agg = runs.map((rs) => ({
    cpuMs: mean(rs.map((x) => x.cpuMs)),
    rps: mean(rs.map((x) => x.rps)),
    p50: mean(rs.map((x) => x.p50)),
    p99: mean(rs.map((x) => x.p99)),
    bad: rs.reduce((a, x) => a + x.bad, 0),
  }));
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
      `First chunk: ${ttfcN} sequential streaming requests; 1 connection: ${ttfcN} sequential requests on one keep-alive connection (after 20 unmeasured); ` +
      `each of these sequential phases starts once its target's process has been idle (at most 8% of a core for 2 s in a row; longest wait: ${[...waited].map(([n, ms]) => `${n} ${(ms / 1000).toFixed(1)} s`).join(', ')}). Latencies in ms; peak RSS is the process's VmHWM at the end; CPU per request is the target process's user + system time (all its threads) over the requests it answered under load, which the machine's other load disturbs far less than requests/s. ` +
      `Load average (1/5/15 min) at the start ${loadStart.map((x) => x.toFixed(2)).join(' / ')}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' / ')}.`,
    '',
    '| target | requests/s | vs Portkey | vs upstream | p50 | p99 | 1 connection p50 (added to upstream) | first chunk p50 / p99 | peak RSS MB | CPU ms per request | non-2xx + errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    ...(notes.length ? ['', ...notes] : []),
  ].join('\n');
  return table;
}

/**
 * The slow-stream scenario: Portkey and tollgate (all roles, one process; and --baseline's) on an
 * upstream streaming 60 chunks 10 ms apart, at each level of concurrent streams, alternating rounds.
 */
async function slowScenario(portkey: Proc, levels: number[]): Promise<string> {
  const seconds = numberArg('slow-duration', 10);
  const rounds = numberArg('rounds', 2);
  const ttfcN = numberArg('slow-ttfc', 20);
  const loadStart = loadavg();
  const upstream = await launch('slow upstream', self('slow-upstream'));
  const upUrl = `http://127.0.0.1:${upstream.port}`;
  const all = (await tollgate(upUrl, 'all')).proc;
  const base = await baseline(upUrl);
  const slowBody = (model: string) => (i: number) =>
    JSON.stringify({
      model,
      messages: [messages[0], { ...messages[1], content: messages[1].content.replace('[<id>]', `[${i}]`) }],
      max_tokens: 256,
      stream: true,
    });
  const tg = (p: Proc): SlowTarget => ({
    port: p.port,
    path: TOLLGATE_PATH,
    headers: { authorization: `Bearer ${p.secret}` },
    body: slowBody('service_3_pi'),
    pids: [p.child.pid!],
  });
  const upAlone: SlowTarget = {
    port: upstream.port,
    path: '/v1/chat/completions',
    headers: {},
    body: slowBody('bench'),
    pids: [upstream.child.pid!],
  };
  const targets: Array<{ name: string; t: SlowTarget }> = [
    { name: 'upstream alone', t: upAlone },
    {
      name: 'Portkey gateway (header shim)',
      t: {
        port: portkey.port,
        path: '/v1/chat/completions',
        headers: portkeyHeadersFor(upUrl)(),
        body: slowBody('bench'),
        pids: [portkey.child.pid!],
      },
    },
    { name: 'tollgate (all roles, one process)', t: tg(all) },
    ...(base ? [{ name: `baseline: ${baselineDir}`, t: tg(base) }] : []),
  ];
  const f = (n: number, d = 2) => n.toFixed(d);
  const rows: string[] = [];
  const failures: string[] = [];
  for (const { t } of targets.slice(1)) await driveSlowStreams(t, 50, 2); // warm-up: JIT, connection pools
  for (const level of levels) {
    const runs: SlowRun[][] = targets.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (const [i, { name, t }] of targets.entries()) {
        process.stderr.write(`slow streams ×${level}, round ${r + 1}/${rounds}: ${name} …\n`);
        runs[i].push(await driveSlowStreams(t, level, seconds));
      }
    }
    for (const [i, { name }] of targets.entries()) {
      const why = runs[i].flatMap((x) => Object.entries(x.failures)).map(([k, n]) => `${n} × ${k}`);
      if (why.length) failures.push(`${level} streams, ${name}: ${why.slice(0, 4).join('; ')}`);
    }
    const pk = mean(runs[1].map((x) => x.streamsPerSec));
    const pkCpu = mean(runs[1].map((x) => x.cpuMsPerStream[0]));
    for (const [i, { name }] of targets.entries()) {
      const rs = runs[i];
      const m = (g: (x: SlowRun) => number) => mean(rs.map(g));
      const sps = m((x) => x.streamsPerSec);
      const cpu = m((x) => x.cpuMsPerStream[0]);
      const idle = Math.min(...rs.map((x) => x.idleRssMb[0]));
      const peak = Math.max(...rs.map((x) => x.peakRssMb[0]));
      const perStream = mean(rs.map((x) => ((x.peakRssMb[0] - x.idleRssMb[0]) * 1024) / x.maxOpen));
      rows.push(
        `| ${level} | ${name} | ${f(sps, 1)} | ${f(sps / pk)}× | ${f(cpu)} | ${f(cpu / pkCpu)}× | ${f(
          m((x) => x.p50),
          0,
        )} | ${f(
          m((x) => x.p99),
          0,
        )} | ` +
          `${f(
            m((x) => x.firstChunkP50),
            1,
          )} / ${f(
            m((x) => x.firstChunkP99),
            1,
          )} | ${Math.round(idle)} → ${Math.round(peak)} | ${f(perStream, 1)} | ` +
          `${rs.reduce((a, x) => a + x.completed, 0)} | ${rs.reduce((a, x) => a + x.failed, 0)} |`,
      );
    }
  }
  // As in the instant scenario: each target first finishes what the last round left it.
  const waits: string[] = [];
  const settle = async (name: string, t: SlowTarget) => waits.push(`${name} ${((await waitForIdle(t.pids[0])) / 1000).toFixed(1)} s`);
  await settle('upstream alone', upAlone);
  const upFirst = percentile(await slowFirstChunks(upAlone, ttfcN), 50);
  const firstRows = [`| upstream alone | ${f(upFirst, 3)} | — |`];
  for (const { name, t } of targets.slice(1)) {
    await settle(name, t);
    const p50 = percentile(await slowFirstChunks(t, ttfcN), 50);
    firstRows.push(`| ${name} | ${f(p50, 3)} | +${f(p50 - upFirst, 3)} |`);
  }
  const hwm = targets.map(({ name, t }) => `${name} ${Math.round(rssMb(t.pids[0], 'VmHWM'))} MB`).join(', ');
  const loadEnd = loadavg();
  return [
    `Slow streams, measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}: ` +
      `an upstream streaming 60 chunks (one word each) 10 ms apart, then [DONE]; N clients each streaming one request after another on the OpenAI route (max_tokens 256: every chunk passes) for ${seconds} s per round, ` +
      `opening their connections at most ${MAX_OPENING} at a time (a client's first request waits until ${MAX_OPENING} others have their first answer: below the listen backlog of 511), ` +
      `then the open streams finish; the mean of ${rounds} alternating rounds per level after a warm-up. Streams/s counts the streams that ended with [DONE] over the time from the window's start until the last one ended; ` +
      `CPU per stream is the gateway process's user + system time (all its threads, /proc/<pid>/stat) from the window's start until its last stream ended, over the streams it completed; ` +
      `latency is the whole stream's, first chunk the time to the first \`data:\` under that load (ms); RSS is sampled every 100 ms (idle: just before the round; KB per open stream: (peak − idle) / streams open at once). ` +
      `Peak RSS (VmHWM) over the whole run: ${hwm}. ` +
      `Load average (1/5/15 min) at the start ${loadStart.map((x) => x.toFixed(2)).join(' / ')}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' / ')}.`,
    '',
    '| streams | target | completed streams/s | vs Portkey | CPU ms per stream | vs Portkey | p50 | p99 | first chunk p50 / p99 | RSS MB idle → peak | KB per open stream | completed | failed |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    ...(failures.length ? ['', `Failed streams: ${failures.join('. ')}.`] : []),
    '',
    `Time to the first chunk at 1 connection: ${ttfcN} sequential streams on one keep-alive connection (after 10 unmeasured), p50 in ms; ` +
      `each target's phase starts once its process has been idle (at most 8% of a core for 2 s in a row; waited: ${waits.join(', ')}).`,
    '',
    '| target | first chunk p50 | added to the upstream |',
    '|---|---|---|',
    ...firstRows,
  ].join('\n');
}

function writeSection(table: string): void {
  replaceDocSection('Peer gateway', `\`npm run bench:peer\` (test/bench/peer.bench.ts).\n\n${table}\n`);
}

main().catch((err) => {
  process.stderr.write(`peer bench failed: ${(err as Error).stack ?? err}\n`);
  for (const c of children) c.kill('SIGTERM');
  process.exit(1);
});
