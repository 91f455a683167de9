import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Router } from 'express';
import type { Queue } from 'bullmq';
import { LoginGuard } from './accounts/sessions/login-guard';
import type { Config } from './platform/config';
import { openEventStore } from './platform/eventstore';
import type { EventStore } from './platform/eventstore/port';
import type { Logger } from './platform/log';
import { Metrics } from './platform/metrics/metrics';
import { observeGateway } from './platform/metrics/observed-gateway';
import { AppendFailure, ObservedStore } from './platform/metrics/observed-store';
import { Keyspace } from './platform/projections/keyspace';
import type { ProjectionProgress } from './platform/projections/progress';
import type { Projection, Reactor } from './platform/projections/projection';
import type { ReadModelReadiness } from './platform/projections/readiness';
import { ReadModels } from './platform/projections/read-models';
import { liveChannel } from './billing/projections/usage/projection';
import { LiveUsageHub } from './billing/projections/usage/live-hub';
import { connectRedis } from './platform/redis';
import { createPaymentGateway, type PaymentGateway } from './billing/payments';
import { bullPrefix, reloadQueue, type ReloadJobData } from './billing/workers/auto-reload/queue';

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
  /** The auto-reload queue (BullMQ), on a connection of its own opened on first use; the same queue every time. */
  reloadQueue(): Promise<Queue<ReloadJobData>>;
  now: () => Date;
  newId: () => string;
  /** Login and signup throttles and the password-hashing cap: one per process (docs/ACCOUNTS.md). */
  loginGuard: LoginGuard;
  /** The /usage/live fan-out: one Redis subscriber per process, connected on its first listener. */
  liveUsage: LiveUsageHub;
  /** A new connection of its own, closed with the services. */
  connectRedis(name: string, opts?: import('ioredis').RedisOptions): Promise<Redis>;
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
  /**
   * Error middleware placed before the one error mapper, for errors under the module's paths that
   * need its own shape; it also sees errors raised before any router (a body that is not JSON).
   */
  errorMiddleware?(): import('express').ErrorRequestHandler;
  /** Background workers (BullMQ processors, sweepers); the worker role runs them. */
  startWorkers?(s: Services): Promise<{ close(): Promise<void> }>;
}

export async function buildServices(config: Config, log: Logger): Promise<Services> {
  const metrics = new Metrics();
  const store = new ObservedStore(openEventStore(config), metrics);
  const extra: Redis[] = [];
  let redis: Redis;
  try {
    await store.ping();
    redis = await connectRedis(config.REDIS_URL, 'main');
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  const ks = new Keyspace(config.REDIS_PREFIX);
  const connect = async (name: string, opts?: import('ioredis').RedisOptions) => {
    const r = await connectRedis(config.REDIS_URL, name, opts);
    extra.push(r);
    return r;
  };
  let queue: Promise<Queue<ReloadJobData>> | undefined;
  const services: Services = {
    config,
    log,
    store,
    redis,
    ks,
    readModels: new ReadModels(redis, ks),
    progress: { waitFor: async () => false },
    metrics,
    storeWrites: store,
    gateway: createPaymentGateway(config, redis, ks, (g) => observeGateway(g, metrics)),
    reloadQueue() {
      // BullMQ wants maxRetriesPerRequest: null on its connections.
      queue ??= services
        .connectRedis('bullmq-queue', { maxRetriesPerRequest: null })
        .then((r) => reloadQueue({ redis: r, prefix: bullPrefix(config) }));
      return queue;
    },
    now: () => new Date(),
    newId: () => randomUUID(),
    loginGuard: new LoginGuard({ config, redis, ks }),
    liveUsage: new LiveUsageHub(
      () => connect('usage-live'),
      (workspaceId) => liveChannel((...p) => ks.shared(...p), workspaceId),
    ),
    connectRedis: connect,
    async close() {
      // disconnect() on a connection that already ended keeps the process alive ~2 s (ioredis).
      for (const r of [...extra, redis]) if (r.status !== 'end') r.disconnect();
      await store.close();
    },
  };
  return services;
}
