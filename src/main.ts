import { createServer, Server } from 'node:http';
import express from 'express';
import { answerClientErrors } from './platform/http/middleware/client-error';
import { errorHandler, notFoundHandler } from './platform/http/middleware/errors';
import { httpMetrics, jsonBody, readModelsGate, requestId, securityHeaders } from './platform/http/middleware/before-routes';
import { openApiRouter } from './openapi/router';
import { healthRouter } from './platform/http/system/health';
import { Config, loadConfig } from './platform/config';
import { createLogger, Logger } from './platform/log';
import { registerCollectors } from './platform/metrics/collectors';
import { metricsHandler } from './platform/metrics/server';
import { RedisProgress } from './platform/projections/progress';
import { ReadModelReadiness } from './platform/projections/readiness';
import { ProjectionRunner } from './platform/projections/runner';
import { PartitionedProjector } from './platform/projections/partitioned-projector';
import { buildServices } from './init';
import * as parts from './services';
import type { Module, Services } from './services';
import { describeStartupError, ListenFailed, startupFailureText } from './platform/startup-error';
import { usagePolicyOf } from './accounts/policy/policy-document';

export type Role = Config['ROLE'];

export interface Running {
  services: Services;
  server?: Server;
  /** The port the HTTP server listens on (useful with PORT=0). */
  port?: number;
  /** The port of the /metrics listener, when METRICS_PORT is set. */
  metricsPort?: number;
  runner?: ProjectionRunner;
  close(): Promise<void>;
}

/**
 * Every feature module (src/modules.ts), loaded on first use: one-shot commands that need no feature
 * module (the CLI's `events read`, a test's fixture modules) start without loading every feature.
 */
export function loadModules(): Module[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('./modules') as typeof import('./modules')).modules;
}

/** The projections of the given feature modules, by default every one (tests and tools use it). */
export function projectionsOf(s: Services, modules: readonly Module[] = loadModules()) {
  return parts.projectionsOf(s, modules);
}

/**
 * The composition root: builds the services and starts what the role runs.
 *   all       — projector, workers and api in one process (npm start)
 *   api       — HTTP only; waits on the projector through Redis pub/sub
 *   projector — the projection runner and reactors (run one active copy)
 *   worker    — BullMQ processors
 */
export async function start(config: Config, opts: { log?: Logger; modules?: Module[] } = {}): Promise<Running> {
  const role = config.ROLE;
  const log = opts.log ?? createLogger(config.LOG_LEVEL, { role });
  const modules = opts.modules ?? loadModules();
  // The api serves the usage policy: a policy file it cannot use stops it before anything starts.
  if (role === 'all' || role === 'api') usagePolicyOf(config);
  const s = await buildServices(config, log);
  const closers: Array<() => Promise<void>> = [];
  let runner: ProjectionRunner | undefined;
  let server: Server | undefined;
  try {
    const startHead = await s.store.headPosition();
    const projections = projectionsOf(s, modules);
    const partitioned = config.PROJECTION_PARTITIONS > 1 && (role === 'all' || role === 'projector');
    if (partitioned) {
      // Several projector processes share the partitions: progress is read from Redis, as an api does.
      const projector = new PartitionedProjector({
        store: s.store,
        prefix: config.REDIS_PREFIX,
        partitions: config.PROJECTION_PARTITIONS,
        leaseMs: config.PROJECTION_LEASE_MS,
        connect: (name) => s.connectRedis(name),
        projections,
        reactors: parts.reactorsOf(s, modules),
        batchSize: config.PROJECTION_BATCH_SIZE,
        log: log.child({ part: 'projector' }),
        onStateLost: (name) => s.metrics.projectionStateLost.inc({ projection: name }),
      });
      await projector.start();
      closers.push(() => projector.stop());
    }
    if (partitioned) {
      s.progress = new RedisProgress(
        await s.connectRedis('progress'),
        s.redis,
        s.ks,
        projections.map((p) => p.name),
        config.PROJECTION_PARTITIONS,
      );
    } else if (role === 'all' || role === 'projector') {
      runner = new ProjectionRunner({
        store: s.store,
        redis: await s.connectRedis('projector'),
        ks: s.ks,
        projections,
        reactors: parts.reactorsOf(s, modules),
        batchSize: config.PROJECTION_BATCH_SIZE,
        log: log.child({ part: 'projector' }),
        notifications: await s.connectRedis('projector-notify'),
        onStateLost: (name) => s.metrics.projectionStateLost.inc({ projection: name }),
      });
      await runner.start();
      s.progress = runner;
      closers.push(() => runner!.stop());
    } else {
      s.progress = new RedisProgress(
        await s.connectRedis('progress'),
        s.redis,
        s.ks,
        projections.map((p) => p.name),
        config.PROJECTION_PARTITIONS,
      );
    }
    if (role === 'all' || role === 'worker') {
      for (const m of modules) {
        const w = await m.startWorkers?.(s);
        if (w) closers.push(() => w.close());
      }
    }
    let port: number | undefined;
    let metricsPort: number | undefined;
    // Also behind the operator token at /admin/metrics, so always collected.
    const collectors = await registerCollectors(s, { projections: projections.map((p) => p.name), queues: parts.queuesOf(modules) });
    closers.push(() => collectors.close());
    if (config.METRICS_PORT !== undefined) {
      const metricsServer = await listenOn(
        createServer(metricsHandler(s.metrics.registry)),
        'METRICS_PORT',
        config.METRICS_PORT,
        config.HOST,
      );
      closers.unshift(() => closeServer(metricsServer));
      metricsPort = portOf(metricsServer, config.METRICS_PORT);
    }
    if (role === 'all' || role === 'api') {
      const readiness = new ReadModelReadiness(
        s.redis,
        s.ks,
        projections.map((p) => p.name),
        250,
        config.PROJECTION_PARTITIONS,
      );
      s.readiness = readiness;
      // A first start over a small store is caught up in moments: answer requests only then.
      if (runner) await Promise.race([runner.caughtUp, new Promise((r) => setTimeout(r, 1000).unref())]);
      await readiness.refresh().catch(() => undefined);
      readiness.start();
      closers.push(async () => readiness.stop());
      const app = createApp(s, modules, startHead);
      const api = createServer({ keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS }, app);
      answerClientErrors(api);
      server = await listenOn(api, 'PORT', config.PORT, config.HOST);
      port = portOf(server, config.PORT);
      const srv = server;
      closers.unshift(() => closeServer(srv));
      log.info({ port, metricsPort, store: s.store.kind }, `tollgate listening on http://${config.HOST}:${port}`);
    }
    return {
      services: s,
      server,
      port,
      metricsPort,
      runner,
      async close() {
        for (const c of closers) await c().catch((err) => log.error({ err }, 'shutdown step failed'));
        await s.close();
      },
    };
  } catch (err) {
    for (const c of closers) await c().catch(() => undefined);
    await s.close();
    throw err;
  }
}

/** The Express app: health, the OpenAPI document and its page, then each module's routes, then 404 and the one error mapper. */
export function createApp(s: Services, modules: Module[], startHead: bigint): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(httpMetrics(s.metrics));
  app.use(requestId);
  app.use(securityHeaders);
  app.use(jsonBody());
  app.use(healthRouter(s, startHead));
  app.use(openApiRouter());
  if (s.readiness) app.use(readModelsGate(s.readiness, parts.hotPathReadModels(modules)));
  // The inference routes are the hot path: mounted first, a request to them is not matched against
  // every account and billing route before it. No other module serves their paths.
  const hotFirst = [...modules].sort((a, b) => Number(b.name === 'inference') - Number(a.name === 'inference'));
  for (const m of hotFirst) {
    const router = m.router?.(s, modules);
    if (router) app.use(router);
  }
  app.use(notFoundHandler);
  for (const m of modules) {
    const shape = m.errorMiddleware?.();
    if (shape) app.use(shape);
  }
  app.use(errorHandler(s.log));
  return app;
}

/**
 * Listens, or rejects with ListenFailed. (Express 5's app.listen passes a listen error to its
 * callback as if it had succeeded: a second instance on a busy port then ran on without listening.)
 */
function listenOn(server: Server, setting: string, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is already in use' : err.code === 'EACCES' ? 'needs more privileges' : err.message;
      reject(new ListenFailed(setting, port, err.code, `cannot listen on ${setting}=${port} (HOST=${host}): the port ${why}`));
    });
    server.listen(port, host, () => resolve(server));
  });
}

function portOf(server: Server, fallback: number): number {
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : fallback;
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export { describeStartupError, ListenFailed };

export async function serve(overrides: Record<string, string> = {}, opts: { modules?: Module[] } = {}): Promise<void> {
  let running: Running;
  let config: Config | undefined;
  try {
    config = loadConfig(overrides);
    running = await start(config, opts);
  } catch (err) {
    process.stderr.write(startupFailureText(describeStartupError(err, config)));
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    running.services.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (require.main === module) void serve();
