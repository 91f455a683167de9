import type { Router } from 'express';
import type { Queue } from 'bullmq';
import type { LoginGuard } from './accounts/sessions/login-guard';
import type { LiveUsageHub } from './billing/projections/usage/live-hub';
import type { PaymentGateway } from './billing/payments/port';
import type { ReloadJobData } from './billing/workers/auto-reload/queue';
import type { ModelBackend } from './inference/backend';
import type { SearchProvider } from './inference/search/port';
import type { PlatformServices } from './platform/services';
import type { Projection, Reactor } from './platform/projections/projection';

/*
 * The types the composition root hands down (built in ./init.ts). Every area type named here is a
 * port or a class whose file imports nothing of this one, so there is no cycle, not even of types
 * (test/platform/unit/import-cycles.test.ts).
 */

/** Everything a feature needs, built once in the composition root (src/init.ts) and handed around. */
export interface Services extends PlatformServices {
  /** The payment gateway, one per process: Stripe when STRIPE_SECRET_KEY is set, else the sandbox. */
  gateway: PaymentGateway;
  /** The model backend (MODEL_BACKEND), built on first use: only the api role generates. */
  model(): ModelBackend;
  /** Web search for the model's tool calls (SEARXNG_URL); absent: no search. */
  search?: SearchProvider;
  /** The auto-reload queue (BullMQ), on a connection of its own opened on first use; the same queue every time. */
  reloadQueue(): Promise<Queue<ReloadJobData>>;
  /** Login and signup throttles and the password-hashing cap: one per process (docs/ACCOUNTS.md). */
  loginGuard: LoginGuard;
  /** The /usage/live fan-out: one Redis subscriber per process, connected on its first listener. */
  liveUsage: LiveUsageHub;
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
  /** The BullMQ queues whose depth /metrics reports. */
  queues?: readonly string[];
}
