/**
 * Login under a password-guessing flood: how long a genuine login takes while N wrong logins are
 * in flight, with the password-hashing gate (PASSWORD_HASH_CONCURRENCY / PASSWORD_HASH_QUEUE at
 * their defaults) against no gate (64 at once, unbounded queue: what the service did before).
 * The flood comes from N different client addresses (X-Forwarded-For from loopback), so the
 * per-address limit does not help: only the gate does. Rounds alternate gate / no gate.
 *
 *   npx tsx test/bench/login.bench.ts [--flood 400] [--addresses 400] [--rounds 3]
 */
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import { startTestServer, TestServer } from '../support/harness';
import { POLICY_VERSION } from '../support/policy';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const FLOOD = arg('flood', 400);
const ROUNDS = arg('rounds', 3);
/** How many client addresses the flood comes from (1: one attacker, whom the per-address limit stops). */
const ADDRESSES = arg('addresses', FLOOD);
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

function post(server: TestServer, path: string, body: unknown, ip: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}${path}`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), 'x-forwarded-for': ip },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function round(gated: boolean) {
  // The harness lifts the queue for test suites: the gated rounds set the service's defaults back.
  const server = await startTestServer(
    gated
      ? { PASSWORD_HASH_CONCURRENCY: '2', PASSWORD_HASH_QUEUE: '8', LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE: '20' }
      : { PASSWORD_HASH_CONCURRENCY: '64', PASSWORD_HASH_QUEUE: '10000' },
  );
  try {
    const email = `genuine-${Date.now()}@example.com`;
    const password = 'correct horse battery';
    await post(server, '/v1/signup', { email, password, name: 'Genuine', acceptedPolicyVersion: POLICY_VERSION }, '203.0.113.1');
    const flood = Array.from({ length: FLOOD }, (_, i) =>
      post(
        server,
        '/v1/login',
        { email: `guess-${i}@example.com`, password: 'wrong password' },
        `198.18.${(i % ADDRESSES) >> 8}.${(i % ADDRESSES) & 255}`,
      ),
    );
    await new Promise((r) => setTimeout(r, 20));
    const genuine = await post(server, '/v1/login', { email, password }, '203.0.113.2');
    const done = await Promise.all(flood);
    const refused = done.filter((r) => r.status === 503 || r.status === 429).length;
    const floodMs = Math.max(...done.map((r) => r.ms));
    if (process.env.BENCH_VERBOSE) {
      const times = done.map((r) => r.ms).sort((a, b) => a - b);
      const statuses: Record<number, number> = {};
      for (const r of done) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      console.error(gated, JSON.stringify(statuses), times[0].toFixed(0), times[times.length >> 1].toFixed(0), genuine);
    }
    return { gated, genuine, refused, floodMs };
  } finally {
    await server.close();
  }
}

async function main() {
  const rows: Awaited<ReturnType<typeof round>>[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    rows.push(await round(true));
    rows.push(await round(false));
  }
  console.log(
    `login under a flood of ${FLOOD} wrong logins from ${ADDRESSES} addresses; ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log('| service | genuine login | its status | flood refused (429/503) | last flood answer |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.gated ? 'now: throttles + gate (2 running, 8 queued)' : 'before: no throttle, no gate'} | ${r.genuine.ms.toFixed(0)} ms | ${r.genuine.status} | ${r.refused} | ${r.floodMs.toFixed(0)} ms |`,
    );
  }
  agent.destroy();
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
