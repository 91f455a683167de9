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
 * The types the composition root hands down (built in ./init.ts), and how it reads the modules'
 * parts. Every area type named here is a port or a class whose file imports nothing of this one, so
 * there is no cycle, not even of types (test/platform/unit/import-cycles.test.ts). Nothing here is
 * loaded but types, so an area's `import type { Services }` costs nothing at runtime.
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
  /**
   * The area's read models the inference hot path answers from (accounts: the key index; billing:
   * balances). They come before every other projection, and the api holds the inference routes
   * back until they are ready.
   */
  hotPathProjections?: readonly Projection[];
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

/** The projections of the given modules: every module's hot-path read models first, then the others, in module order. */
export function projectionsOf(s: Services, modules: readonly Module[]): Projection[] {
  return [...modules.flatMap((m) => m.hotPathProjections ?? []), ...modules.flatMap((m) => m.projections?.(s) ?? [])];
}

/** The names of the read models the inference hot path answers from (readModelsGate holds its routes back until they are ready). */
export function hotPathReadModels(modules: readonly Module[]): string[] {
  return modules.flatMap((m) => (m.hotPathProjections ?? []).map((p) => p.name));
}

export function reactorsOf(s: Services, modules: readonly Module[]): Reactor[] {
  return modules.flatMap((m) => m.reactors?.(s) ?? []);
}

/** The BullMQ queues the modules name for /metrics, in module order. */
export function queuesOf(modules: readonly Module[]): string[] {
  return modules.flatMap((m) => m.queues ?? []);
}
