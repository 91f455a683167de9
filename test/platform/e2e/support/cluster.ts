import { randomBytes } from 'node:crypto';
/**
 * A tollgate cluster of real processes for the fault tests: roles started with role-child.ts over one
 * PostgreSQL event store (a database of its own), one Redis (a prefix of its own), Stripe in Stripe
 * mode against the local wire-format server, and the instant OpenAI-compatible upstream (a fixed
 * short reply, no model time) in the test process. Prices are raised (0.001 USD per input token,
 * 0.005 per output token) so that holds and costs are sizeable against a deposit.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { PostgresEventStore } from '../../../../src/platform/eventstore/postgres';
import { Keyspace } from '../../../../src/platform/projections/keyspace';
import { ReadModels } from '../../../../src/platform/projections/read-models';
import { api, attach, deposit, newUser, TestUser } from '../../../billing/e2e/helpers';
import { bundleChild, Child } from '../../../support/child-process';
import type { TestServer } from '../../../support/harness';
import { OpenAiUpstream, startOpenAiUpstream } from '../../../support/openai-upstream/server';
import { createTestDatabase, TestDatabase } from '../../../support/postgres';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../../support/redis';
import { StripeWireServer } from '../../../support/stripe-server';

export const ADMIN_TOKEN = 'cluster-faults-admin-token-0123456789';

/** The helpers take a TestServer for its url and its config (the children run the default usage policy). */
export const at = (url: string) => ({ url, services: { config: {} } }) as unknown as TestServer;

export interface Infer {
  status: number;
  requestId: string | null;
  body: string;
}

export class Cluster {
  db!: TestDatabase;
  stripe!: StripeWireServer;
  upstream!: OpenAiUpstream;
  store!: PostgresEventStore;
  redis!: Redis;
  rm!: ReadModels;
  readonly prefix = uniquePrefix('test');
  readonly children = new Set<Child>();
  /** Loads still running (a failed test leaves its load behind): close() stops them. */
  readonly loads = new Set<Load>();
  private child!: { args: string[]; dispose(): void };
  env: Record<string, string> = {};
  /** One master key for every role and for a replay: each must unwrap the data keys the others made. */
  readonly masterKey = randomBytes(32).toString('base64');

  /** `settings` are added to every role's environment. */
  async start(label: string, settings: Record<string, string>): Promise<void> {
    this.child = bundleChild(join(__dirname, 'role-child.ts'));
    [this.db, this.stripe, this.upstream] = await Promise.all([
      createTestDatabase(label),
      new StripeWireServer().start(),
      startOpenAiUpstream(() => ({ chunks: ['Hello', ' there', '!'] })),
    ]);
    this.env = {
      EVENT_STORE: 'postgres',
      DATABASE_URL: this.db.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: this.prefix,
      HOST: '127.0.0.1',
      PORT: '0',
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      ADMIN_TOKEN,
      STRIPE_SECRET_KEY: 'sk_test_cluster_faults',
      STRIPE_API_URL: this.stripe.url,
      STRIPE_MAX_NETWORK_RETRIES: '2',
      MIN_DEPOSIT_USD: '10',
      PRICE_INPUT_NANO_USD_PER_TOKEN: '1000000',
      PRICE_OUTPUT_NANO_USD_PER_TOKEN: '5000000',
      RATE_LIMIT_PER_MINUTE: '1000000',
      // A loaded machine's projectors can lag past the default 5 s an account write waits for them.
      READ_YOUR_WRITES_TIMEOUT_MS: '30000',
      MODEL_BACKEND: 'openai',
      OPENAI_BASE_URL: this.upstream.baseUrl,
      OPENAI_API_KEY: 'sk-instant',
      MASTER_KEY: this.masterKey,
      ...settings,
    };
    this.store = new PostgresEventStore({ connectionString: this.db.url });
    this.redis = new Redis(TEST_REDIS_URL);
    this.rm = new ReadModels(this.redis, new Keyspace(this.prefix));
  }

  spawn(role: string, extra: Record<string, string> = {}): Child {
    const c = new Child(this.child.args, { ...this.env, ROLE: role, ...extra });
    this.children.add(c);
    void c.exited.then(() => this.children.delete(c));
    return c;
  }

  /** Starts a role and waits until it is up; `url` for the api role. */
  async role(role: string, extra: Record<string, string> = {}): Promise<{ child: Child; url: string }> {
    for (let attempt = 1; ; attempt++) {
      const c = this.spawn(role, extra);
      try {
        const [, port] = await c.waitFor(/^ready (\S+)/, 90_000);
        return { child: c, url: `http://127.0.0.1:${port}` };
      } catch (err) {
        // On a loaded machine a starting child can miss its 3 s Redis check: start it again, four times at most.
        if (attempt >= 5 || !/RedisUnavailable/.test(c.stderr)) throw err;
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.loads].map((l) => l.stop()));
    // SIGCONT first: a child left stopped would not act on SIGTERM.
    for (const c of this.children) c.proc.kill('SIGCONT');
    await Promise.all([...this.children].map((c) => c.kill('SIGKILL')));
    this.redis?.disconnect();
    await this.store?.close();
    await this.stripe?.close();
    await this.upstream?.close();
    await this.db?.drop();
    await cleanupPrefix(TEST_REDIS_URL, this.prefix);
    this.child?.dispose();
  }

  /** A user whose personal workspace has a card, `usd` deposited, and a key with no rate limit to speak of. */
  async funded(via: string, label: string, usd: string): Promise<{ user: TestUser; ws: string; secret: string }> {
    const user = await newUser(at(via), label);
    expect((await attach(at(via), user, user.personalWs)).status).toBe(200);
    expect((await deposit(at(via), user, user.personalWs, usd)).status).toBe(201);
    const key = await api(at(via)).post(`/v1/workspaces/${user.personalWs}/keys`).set(user.auth).send({ name: 'faults' });
    expect(key.status).toBe(201);
    return { user, ws: user.personalWs, secret: key.body.secret };
  }

  async infer(base: string, secret: string, opts: { maxTokens?: number; stream?: boolean; text?: string } = {}): Promise<Infer> {
    const res = await fetch(`${base}/external/api/inference`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        context: [{ type: 'Human', text: opts.text ?? 'Say hello.' }],
        config: 'service_3_pi',
        max_tokens: opts.maxTokens ?? 16,
        ...(opts.stream ? { stream: true } : {}),
      }),
    });
    return { status: res.status, requestId: res.headers.get('x-request-id'), body: await res.text() };
  }

  /** The store's TokensDebited events of one workspace. */
  async debitsOf(ws: string): Promise<Array<{ requestId: string; amountNanoUsd: string }>> {
    return (await this.store.readAll())
      .filter((e) => e.type === 'TokensDebited' && (e.data as { workspaceId: string }).workspaceId === ws)
      .map((e) => e.data as { requestId: string; amountNanoUsd: string });
  }
}

/**
 * Requests kept in flight (`concurrency` at a time, over the given api urls and keys) until stop():
 * every status is recorded.
 */
export class Load {
  readonly results: Array<Infer & { ws: number }> = [];
  private running = true;
  private readonly workers: Promise<void>[];
  private readonly stopped: () => void;

  constructor(
    cluster: Cluster,
    urls: () => string[],
    secrets: string[],
    concurrency: number,
    opts: { maxTokens?: number; max?: number } = {},
  ) {
    cluster.loads.add(this);
    this.stopped = () => cluster.loads.delete(this);
    let n = 0;
    this.workers = Array.from({ length: concurrency }, async () => {
      while (this.running && (opts.max === undefined || n < opts.max)) {
        const i = n++;
        const u = urls();
        try {
          const r = await cluster.infer(u[i % u.length], secrets[i % secrets.length], { maxTokens: opts.maxTokens });
          this.results.push({ ...r, ws: i % secrets.length });
        } catch (err) {
          // The api process went away mid-request (a test killed it): counted, never acknowledged.
          this.results.push({ status: 0, requestId: null, body: (err as Error).message, ws: i % secrets.length });
        }
      }
    });
  }

  get done(): number {
    return this.results.length;
  }

  async stop(): Promise<this> {
    this.running = false;
    await Promise.all(this.workers);
    this.stopped();
    return this;
  }

  statuses(): Record<number, number> {
    const out: Record<number, number> = {};
    for (const r of this.results) out[r.status] = (out[r.status] ?? 0) + 1;
    return out;
  }
}
