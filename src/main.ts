import type { Server } from 'node:http';
import { createApp } from './api/app';
import { Config, ConfigError, loadConfig } from './config';
import { createLogger, Logger } from './log';
import { RedisProgress } from './projections/progress';
import type { Projection, Reactor } from './projections/projection';
import { ProjectionRunner } from './projections/runner';
import { buildServices, Module, Services } from './services';

export type Role = Config['ROLE'];

export interface Running {
  services: Services;
  server?: Server;
  /** The port the HTTP server listens on (useful with PORT=0). */
  port?: number;
  runner?: ProjectionRunner;
  close(): Promise<void>;
}

/**
 * src/modules.ts, loaded on first use: one-shot commands that need no feature module (the CLI's
 * `events read`, a test's fixture modules) start without loading every feature.
 */
function allModules(): Module[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('./modules') as typeof import('./modules')).modules;
}

export function projectionsOf(s: Services, modules: Module[] = allModules()): Projection[] {
  return modules.flatMap((m) => m.projections?.(s) ?? []);
}

export function reactorsOf(s: Services, modules: Module[] = allModules()): Reactor[] {
  return modules.flatMap((m) => m.reactors?.(s) ?? []);
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
  const modules = opts.modules ?? allModules();
  const s = await buildServices(config, log);
  const closers: Array<() => Promise<void>> = [];
  let runner: ProjectionRunner | undefined;
  let server: Server | undefined;
  try {
    const startHead = await s.store.headPosition();
    const projections = projectionsOf(s, modules);
    if (role === 'all' || role === 'projector') {
      runner = new ProjectionRunner({
        store: s.store,
        redis: await s.connectRedis('projector'),
        ks: s.ks,
        projections,
        reactors: reactorsOf(s, modules),
        batchSize: config.PROJECTION_BATCH_SIZE,
        log: log.child({ part: 'projector' }),
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
      );
    }
    if (role === 'all' || role === 'worker') {
      for (const m of modules) {
        const w = await m.startWorkers?.(s);
        if (w) closers.push(() => w.close());
      }
    }
    let port: number | undefined;
    if (role === 'all' || role === 'api') {
      const app = createApp(s, modules, startHead);
      server = await new Promise<Server>((resolve, reject) => {
        const srv = app.listen(config.PORT, config.HOST, () => resolve(srv));
        srv.once('error', reject);
      });
      const addr = server.address();
      port = typeof addr === 'object' && addr ? addr.port : config.PORT;
      closers.unshift(
        () =>
          new Promise<void>((resolve) => {
            server!.close(() => resolve());
            server!.closeAllConnections();
          }),
      );
      log.info({ port, store: s.store.kind }, `tollgate listening on http://${config.HOST}:${port}`);
    }
    return {
      services: s,
      server,
      port,
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

/** Turns a start-up failure into one line naming what is wrong, never a stack trace. */
export function describeStartupError(
  err: unknown,
  config?: Pick<Config, 'EVENT_STORE' | 'DATA_DIR' | 'EVENTSTORE_CONNECTION_STRING'>,
): string {
  if (err instanceof ConfigError) return err.lines.join('\n');
  const e = err as { name?: string; message?: string; code?: string; syscall?: string; port?: number };
  if (e?.code === 'EADDRINUSE') return `cannot listen: PORT ${e.port ?? ''} is already in use`.replace('  ', ' ');
  if (e?.code === 'EACCES' && e.syscall === 'listen') return `cannot listen on PORT ${e.port ?? ''}: permission denied`;
  // One line: some drivers put a multi-line explanation into the message.
  const message = (e?.message ?? String(err)).split('\n')[0];
  if (e?.name === 'StoreUnavailable' && config) {
    // Name the setting to fix, not just the driver's complaint.
    const setting =
      config.EVENT_STORE === 'esdb'
        ? `EVENTSTORE_CONNECTION_STRING=${(config.EVENTSTORE_CONNECTION_STRING ?? '').replace(/\/\/([^@/]*)@/, '//***@')}`
        : `DATA_DIR=${config.DATA_DIR}`;
    return `event store unavailable (EVENT_STORE=${config.EVENT_STORE}, ${setting}): ${message}`;
  }
  return `${e?.name ?? 'Error'}: ${message}`;
}

export async function serve(overrides: Record<string, string> = {}, opts: { modules?: Module[] } = {}): Promise<void> {
  let running: Running;
  let config: Config | undefined;
  try {
    config = loadConfig(overrides);
    running = await start(config, opts);
  } catch (err) {
    process.stderr.write(`tollgate: ${describeStartupError(err, config)}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    running.services.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    running.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (require.main === module) void serve();
