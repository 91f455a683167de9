import { z } from 'zod';

/**
 * The one environment schema. Nothing else in the code base reads process.env:
 * everything arrives through the Config object built here, once, at start-up.
 */

const nanoUsd = (def: string) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number of nano-USD')
    .default(def)
    .transform((s) => BigInt(s));

const usd = (def: string) =>
  z
    .string()
    .regex(/^\d+(\.\d{1,9})?$/, 'must be a USD amount such as 100 or 2.50')
    .default(def);

const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = (def: number) => z.coerce.number().int().min(0).max(65535).default(def);

const redisUrl = z
  .string()
  .default('redis://127.0.0.1:6379')
  .refine((s) => /^rediss?:\/\/[^\s]+$/.test(s), 'must look like redis://host:port[/db]');

/** `host:port,host:port,…`, parsed into the list. */
const clusterNodes = z
  .string()
  .refine(
    (s) => s.split(',').every((n) => /^[^\s:,/]+:\d{1,5}$/.test(n.trim())),
    'must be host:port,host:port,… (the seed nodes of a Redis Cluster)',
  )
  .transform((s) => s.split(',').map((n) => n.trim()));

const esdbUrl = z.string().refine((s) => /^esdb(\+discover)?:\/\/[^\s/]+/.test(s), 'must look like esdb://host:2113?tls=false');

const postgresUrl = z.string().refine((s) => /^postgres(ql)?:\/\/[^\s]+$/.test(s), 'must look like postgres://user@host:5432/database');

/** 32 bytes in base64 (standard or url-safe). */
const masterKey = z
  .string()
  .refine(
    (s) =>
      /^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(s.trim()) &&
      Buffer.from(s.trim().replace(/-/g, '+').replace(/_/g, '/'), 'base64').length === 32,
    'must be 32 bytes in base64 (openssl rand -base64 32)',
  );

const httpUrl = z.string().refine((s) => /^https?:\/\/[^\s]+$/.test(s), 'must be an http(s) URL');

export const envSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: port(8080),
    HOST: z.string().default('0.0.0.0'),
    /** Prometheus /metrics on a listener of its own (on HOST); unset: no listener. */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    /**
     * How long an idle keep-alive connection to the API stays open. Above a load balancer's idle
     * timeout (60 s on the common ones), so the balancer, not tollgate, closes an idle connection:
     * otherwise a request sent on it as tollgate closes it fails with ECONNRESET.
     */
    HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(65_000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    ROLE: z.enum(['all', 'api', 'projector', 'worker']).default('all'),

    DATA_DIR: z.string().default('./data'),
    EVENT_STORE: z.enum(['sqlite', 'esdb', 'postgres']).default('sqlite'),
    EVENTSTORE_CONNECTION_STRING: esdbUrl.optional(),
    /** The PostgreSQL event store (EVENT_STORE=postgres). */
    DATABASE_URL: postgresUrl.optional(),
    /**
     * Wraps the data keys that seal personal fields and secrets in events (docs/SECURITY.md): 32 bytes
     * in base64 (`openssl rand -base64 32`). Unset: a key generated once in `${DATA_DIR}/master.key`.
     */
    MASTER_KEY: masterKey.optional(),
    /** The master key before a rotation: still unwraps data keys until `tollgate keys rotate-master` re-wrapped them. */
    MASTER_KEY_PREVIOUS: masterKey.optional(),
    /**
     * Signs inference receipts (Ed25519; its 32-byte seed in base64, `openssl rand -base64 32`).
     * Unset: a key generated once in `${DATA_DIR}/receipt-signing.key`. Every api process needs the same one.
     */
    RECEIPT_SIGNING_KEY: masterKey.optional(),
    /** Public keys (base64url, comma-separated) of retired signing keys: still in the JWKS, so old receipts verify. */
    RECEIPT_SIGNING_KEYS_RETIRED: z
      .string()
      .refine(
        (s) =>
          s.split(',').every((k) => Buffer.from(k.trim(), 'base64url').length === 32 && /^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(k.trim())),
        'must be comma-separated 32-byte public keys in base64url (the JWKS `x` values)',
      )
      .transform((s) => s.split(',').map((k) => k.trim()))
      .optional(),
    /** With EVENT_STORE=esdb, the data keys' PostgreSQL database; unset: `${DATA_DIR}/keys.sqlite`. */
    KEY_STORE_DATABASE_URL: postgresUrl.optional(),

    REDIS_URL: redisUrl,
    /**
     * A Redis Cluster instead of one Redis: its seed nodes. When set, REDIS_URL is ignored. The
     * service does not run on a cluster end to end yet (docs/OPERATIONS.md, "Redis Cluster").
     */
    REDIS_CLUSTER_NODES: clusterNodes.optional(),
    /** How long a connection to Redis may take at start (each connect and its first PING). */
    REDIS_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120000).default(10000),
    /** Every Redis key this process touches starts with this, so tests and services can share one Redis. */
    REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9:_-]*$/, 'letters, digits, ":", "_" and "-" only')
      .default('tg:'),

    /** Operator token for /admin. Unset means /admin answers 404. */
    ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    SESSION_TTL_SECONDS: z.coerce
      .number()
      .int()
      .positive()
      .default(7 * 24 * 3600),
    COOKIE_SECURE: bool(false),

    /** Login and signup attempts per client address per minute (refused before any password hashing). */
    LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE: z.coerce.number().int().positive().default(20),
    /** Failed logins per e-mail address within LOGIN_FAILURE_WINDOW_SECONDS; a success clears them. */
    LOGIN_FAILURES_PER_EMAIL: z.coerce.number().int().positive().default(10),
    LOGIN_FAILURE_WINDOW_SECONDS: z.coerce.number().int().positive().default(900),
    /** Password hashes (scrypt) computed at once per process, and how many may wait; more are refused with 503. */
    PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
    PASSWORD_HASH_QUEUE: z.coerce.number().int().min(0).max(10000).default(8),
    /** Invitations one admin may send per hour (an invitation tells whether an e-mail has an account). */
    INVITATIONS_PER_ADMIN_PER_HOUR: z.coerce.number().int().positive().default(30),
    /** Open live usage streams per user per api process. */
    LIVE_STREAMS_PER_USER: z.coerce.number().int().positive().default(5),

    PRICE_INPUT_NANO_USD_PER_TOKEN: nanoUsd('2500'),
    PRICE_OUTPUT_NANO_USD_PER_TOKEN: nanoUsd('10000'),
    INITIAL_DEPOSIT_USD: usd('100'),
    MIN_DEPOSIT_USD: usd('10'),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(100),
    IDEMPOTENCY_WINDOW_SECONDS: z.coerce.number().int().min(60).max(604800).default(86400),

    /** Outgoing webhooks (docs/WEBHOOKS.md): deliver to private, loopback and link-local addresses too (SSRF guard off). */
    WEBHOOKS_ALLOW_PRIVATE_TARGETS: bool(false),
    /** Attempts per webhook delivery; with the base delay below, 15 attempts span about a day. */
    WEBHOOKS_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(30).default(15),
    /** First retry delay of a webhook delivery; each next one doubles (BullMQ exponential backoff). */
    WEBHOOKS_RETRY_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(5000),
    WEBHOOKS_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    /** New webhook replays a workspace may start per UTC day (one runs per endpoint at a time). */
    WEBHOOKS_MAX_REPLAYS_PER_DAY: z.coerce.number().int().min(1).max(10_000).default(20),

    STRIPE_SECRET_KEY: z.string().startsWith('sk_', 'must start with sk_').optional(),
    STRIPE_PUBLISHABLE_KEY: z.string().startsWith('pk_', 'must start with pk_').optional(),
    STRIPE_WEBHOOK_SECRET: z.string().startsWith('whsec_', 'must start with whsec_').optional(),
    /** Points the Stripe SDK elsewhere (tests use a local Stripe-wire server). */
    STRIPE_API_URL: httpUrl.optional(),
    STRIPE_MAX_NETWORK_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
    /** How long one Stripe call may take before it counts as unanswered (then retried with the same idempotency key). */
    STRIPE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120000).default(30000),

    MODEL_BACKEND: z.enum(['demo', 'openai']).default('demo'),
    OPENAI_BASE_URL: httpUrl.optional(),
    OPENAI_API_KEY: z.string().optional(),
    OPENAI_MODEL_PI: z.string().optional(),
    OPENAI_MODEL_PRODUCTIVITY: z.string().optional(),
    SEARXNG_URL: httpUrl.optional(),
    /** Per-config upstreams (MODEL_BACKEND=openai); each falls back to OPENAI_BASE_URL / OPENAI_API_KEY. */
    OPENAI_BASE_URL_PI: httpUrl.optional(),
    OPENAI_BASE_URL_PRODUCTIVITY: httpUrl.optional(),
    OPENAI_API_KEY_PI: z.string().optional(),
    OPENAI_API_KEY_PRODUCTIVITY: z.string().optional(),
    /** Longest one generation may run before the upstream is cut off. */
    INFERENCE_TIMEOUT_MS: z.coerce.number().int().positive().default(300000),
    /** The demo model's pause between tokens (0: as fast as it can). */
    DEMO_TOKEN_DELAY_MS: z.coerce.number().int().min(0).max(10000).default(0),
    SEARXNG_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
    /** The sweeper closes inference requests whose process died (a BullMQ repeatable job). */
    SWEEPER_ENABLED: bool(true),
    SWEEPER_INTERVAL_MS: z.coerce.number().int().positive().default(60000),
    SWEEPER_MIN_AGE_MS: z.coerce.number().int().positive().default(900000),

    PROJECTION_BATCH_SIZE: z.coerce.number().int().min(1).max(100000).default(500),
    /**
     * Workspace partitions of the read models (src/platform/projections/partitions.ts): projector
     * processes share them, one owner per partition. 1: one projector applies everything (as before).
     */
    PROJECTION_PARTITIONS: z.coerce.number().int().min(1).max(256).default(1),
    /** A partition owner's lease: a dead projector's partitions move to the others after at most this. */
    PROJECTION_LEASE_MS: z.coerce.number().int().min(300).max(600000).default(5000),
    /** How long a write waits for the projections to reach it before answering anyway. */
    READ_YOUR_WRITES_TIMEOUT_MS: z.coerce.number().int().min(0).default(5000),
    /** The usage policy served and accepted (version, effective date, rules); unset: docs/USAGE-POLICY.md. */
    USAGE_POLICY_FILE: z.string().optional(),
  })
  .superRefine((env, ctx) => {
    if (env.EVENT_STORE === 'esdb' && !env.EVENTSTORE_CONNECTION_STRING) {
      ctx.addIssue({
        code: 'custom',
        path: ['EVENTSTORE_CONNECTION_STRING'],
        message: 'is required when EVENT_STORE=esdb',
      });
    }
    if (env.EVENT_STORE === 'postgres' && !env.DATABASE_URL) {
      ctx.addIssue({ code: 'custom', path: ['DATABASE_URL'], message: 'is required when EVENT_STORE=postgres' });
    }
    if (env.MODEL_BACKEND === 'openai' && !env.OPENAI_BASE_URL) {
      ctx.addIssue({ code: 'custom', path: ['OPENAI_BASE_URL'], message: 'is required when MODEL_BACKEND=openai' });
    }
  });

export type Config = z.infer<typeof envSchema>;

export class ConfigError extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment once. A bad setting throws a ConfigError with one line per bad variable.
 * `overrides` win over the environment (the CLI's --role, a test's isolated prefix).
 */
export function loadConfig(
  overrides: Record<string, string | undefined> = {},
  env: Record<string, string | undefined> = process.env,
): Config {
  // Empty strings mean "unset": shells and compose files often export VAR= for optional values.
  const cleaned = Object.fromEntries(Object.entries({ ...env, ...overrides }).filter(([, v]) => v !== undefined && v !== '')) as Record<
    string,
    string
  >;
  const parsed = envSchema.safeParse(cleaned);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0] ?? 'environment');
    const value = cleaned[name];
    const secret = name.includes('SECRET') || name.includes('TOKEN') || name.includes('KEY');
    // A URL's password (DATABASE_URL, REDIS_URL) is never echoed.
    const shown = value === undefined ? '' : ` (got "${secret ? '***' : value.replace(/\/\/[^@/\s]*@/, '//***@')}")`;
    return `invalid setting ${name}: ${issue.message}${shown}`;
  });
  throw new ConfigError([...new Set(lines)]);
}
