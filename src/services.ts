import type { Redis, RedisOptions } from 'ioredis';
import type { Router } from 'express';
import type { Queue } from 'bullmq';
import type { LoginGuard } from './accounts/sessions/login-guard';
import type { Config } from './platform/config';
import type { EventStore } from './platform/eventstore/port';
import type { Logger } from './platform/log';
import type { Metrics } from './platform/metrics/metrics';
import type { AppendFailure } from './platform/metrics/observed-store';
import type { Keyspace } from './platform/projections/keyspace';
import type { ProjectionProgress } from './platform/projections/progress';
import type { Projection, Reactor } from './platform/projections/projection';
import type { ReadModelReadiness } from './platform/projections/readiness';
import type { ReadModels } from './platform/projections/read-models';
import type { LiveUsageHub } from './billing/projections/usage/live-hub';
import type { PaymentGateway } from './billing/payments/port';
import type { ReloadJobData } from './billing/workers/auto-reload/queue';
import type { ModelBackend } from './inference/backend';
import type { SearchProvider } from './inference/search/port';

/*
 * The types the composition root hands down (built in ./init.ts). Every area type named here is a
 * port or a class whose file imports nothing of this one, so there is no cycle, not even of types
 * (test/platform/unit/import-cycles.test.ts).
 */

/** Everything a feature needs, built once in the composition root and handed around. */
export interface Services {
  config: Config;
  log: Logger;
  store: EventStore;
  /** The shared command connection. Use `connectRedis` for subscribers, BullMQ and the runner. */
  redis: Redis;
  ks: Keyspace;
  readModels: ReadModels;
  /** Set by the composition root: waits until projections applied a position. */
  progress: ProjectionProgress;
  /** Set by the composition root in the api role: which read models are ready to answer from. */
  readiness?: ReadModelReadiness;
  /** This process's Prometheus registry and instruments. */
  metrics: Metrics;
  /** Whether the event store took the last append (for /readyz). */
  storeWrites: { readonly lastAppendFailure: AppendFailure | null };
  /** The payment gateway, one per process: Stripe when STRIPE_SECRET_KEY is set, else the sandbox. */
  gateway: PaymentGateway;
  /** The model backend (MODEL_BACKEND), built on first use: only the api role generates. */
  model(): ModelBackend;
  /** Web search for the model's tool calls (SEARXNG_URL); absent: no search. */
  search?: SearchProvider;
  /** The auto-reload queue (BullMQ), on a connection of its own opened on first use; the same queue every time. */
  reloadQueue(): Promise<Queue<ReloadJobData>>;
  now: () => Date;
  newId: () => string;
  /** Login and signup throttles and the password-hashing cap: one per process (docs/ACCOUNTS.md). */
  loginGuard: LoginGuard;
  /** The /usage/live fan-out: one Redis subscriber per process, connected on its first listener. */
  liveUsage: LiveUsageHub;
  /** A new connection of its own, closed with the services. */
  connectRedis(name: string, opts?: RedisOptions): Promise<Redis>;
  close(): Promise<void>;
}

/**
 * A feature slice: its projections, reactors, routes and workers. The composition root
 * (src/main.ts) starts the parts that the process's role runs.
 */
export interface Module {
  name: string;
  projections?(s: Services): Projection[];
  reactors?(s: Services): Reactor[];
  /** `modules`: every module the app serves (the admin routes list their projections). */
  router?(s: Services, modules: readonly Module[]): Router;
  /** Background workers (BullMQ processors, sweepers); the worker role runs them. */
  startWorkers?(s: Services): Promise<{ close(): Promise<void> }>;
}
