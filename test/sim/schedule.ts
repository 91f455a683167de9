import Redis from 'ioredis';
import { createKey, updateKey } from '../../src/accounts/usecases';
import { createWorkspace } from '../../src/accounts/usecases';
import { attachPaymentMethod, configureAutoReload, makeDeposit } from '../../src/billing/usecases';
import { getBalance } from '../../src/billing/projections/balances/queries';
import { parseUsd } from '../../src/platform/money';
import { Reservations } from '../../src/billing';
import { Keyspace } from '../../src/platform/projections/keyspace';
import type { CallOutcome } from './api';
import { Cluster } from './cluster';
import { type Attempt, checkCallers, checkLiveness, checkSafety } from './invariants';
import { SimGateway, SimModel, SimQueue } from './ports';
import type { RedisPool } from './redis-gate';
import { simConfig, type Shared } from './services';
import * as mode from './sim-mode';
import { SimEventStore } from './store';
import { Proc, SimFailure, World, type Port } from './world';

/**
 * One schedule, fully determined by its seed: the configuration (process counts, partitions, fault
 * rates, prices) is drawn first, then a setup without faults (workspaces, cards, first deposits,
 * keys), then at least 50 client operations under faults, then the faults stop, every process is
 * restarted and the cluster settles, and liveness is checked.
 */

export interface ScheduleResult {
  seed: number;
  ok: boolean;
  failure?: { invariant: string; message: string };
  hash: string;
  trace: string[];
  steps: number;
  ops: number;
  apis: number;
  projectors: number;
  faults: string[];
  virtualMs: number;
}

export interface RunEnv {
  pool: RedisPool;
  admin: Redis;
  /** Distinct per concurrent runner (worker processes share the Redis). */
  prefixBase: string;
}

interface Ws {
  id: string;
  owner: string;
  keys: Array<{ keyId: string; secret: string }>;
}

export async function runSchedule(seed: number, env: RunEnv): Promise<ScheduleResult> {
  const world = new World(seed);
  const rng = world.rng;
  const prefix = `${env.prefixBase}${seed}:`;
  const partitions = rng.between(2, 4);
  const apis = rng.between(1, 3);
  const projectors = rng.between(1, 3);
  const config = simConfig(prefix, {
    PROJECTION_PARTITIONS: String(partitions),
    PRICE_OUTPUT_NANO_USD_PER_TOKEN: String(rng.pick([10_000, 20_000_000, 100_000_000])),
    PRICE_INPUT_NANO_USD_PER_TOKEN: String(rng.pick([2_500, 5_000_000])),
  });
  const quiet = rng.chance(0.1);
  const rate = () => (quiet ? 0 : rng.pick([0, 0.01, 0.03, 0.06, 0.1]));
  const rates: Record<Port, number> = { redis: rate(), store: rate(), gateway: rate() * 3, upstream: rate(), queue: rate() * 2 };
  const between = quiet ? 0 : rng.pick([0, 0.002, 0.005, 0.01]);

  env.pool.broken = null;
  await env.pool.prepare(120);
  env.pool.world = world;
  const store = new SimEventStore(world, () => world.nowMs());
  const gateway = new SimGateway(world);
  const model = new SimModel(world);
  const queue = new SimQueue(world);
  const sh: Shared & { admin: Redis } = { world, pool: env.pool, store, gateway, model, queue, config, admin: env.admin };
  const attempts: Attempt[] = [];
  const opsDone = { n: 0 };
  let redisLosses = 0;
  let result: ScheduleResult | undefined;
  mode.enter(world);
  try {
    const cluster = new Cluster(sh, { apis, projectors });
    await cluster.start();
    world.trace(`config apis=${apis} projectors=${projectors} partitions=${partitions} rates=${JSON.stringify(rates)} between=${between}`);
    const callerProc = new Proc('caller', 'caller', false);

    // ---- setup, no faults ----
    const workspaces: Ws[] = [];
    const wsCount = rng.between(1, 3);
    let setupDone = false;
    world.within(callerProc, () => {
      void (async () => {
        const api = cluster.apis[0];
        const s = api.s;
        for (let i = 0; i < wsCount; i++) {
          const owner = world.rng.uuid();
          const meta = { actor: owner, correlationId: `setup-${i}` };
          const { workspaceId } = await world.within(api.proc, () => createWorkspace(s, { name: `ws${i}`, by: owner, metadata: meta }));
          await world.within(api.proc, () => attachPaymentMethod(s, { workspaceId, paymentMethodId: 'pm_card_visa', metadata: meta }));
          await world.within(api.proc, () =>
            makeDeposit(s, {
              workspaceId,
              idempotencyKey: `setup-${i}`,
              amount: parseUsd(config.INITIAL_DEPOSIT_USD),
              by: owner,
              metadata: meta,
            }),
          );
          const w: Ws = { id: workspaceId, owner, keys: [] };
          for (let k = 0; k < rng.between(1, 2); k++) {
            const key = await world.within(api.proc, () =>
              createKey(s, { workspaceId, name: `key ${k}`, expiresAt: null, by: owner, now: s.now(), metadata: meta }),
            );
            w.keys.push({ keyId: key.keyId, secret: key.secret });
          }
          workspaces.push(w);
        }
        setupDone = true;
      })().catch((err: Error) => {
        world.trace(`setup failed: ${err.stack}`);
        setupDone = true;
      });
    });
    await world.run(world.now + 120_000, () => setupDone);
    if (workspaces.length === 0) throw new SimFailure('setup', 'the setup did not finish');

    // ---- client operations under faults ----
    world.rates = { step: rates };
    world.faultsOn = true;
    world.afterStep = async () => {
      checkSafety(store.all, gateway.charges);
    };
    world.between = async () => {
      if (!rng.chance(between)) return;
      const kind = rng.pick(['redis-flush', 'clock-jump', 'lease-expiry', 'upstream-cut', 'crash'] as const);
      world.count(`world:${kind}`);
      switch (kind) {
        case 'redis-flush': {
          redisLosses++;
          for (const a of attempts) if (a.outcome === 'pending') a.redisLost = true;
          const keys = await env.admin.keys(`${prefix}*`);
          if (keys.length) await env.admin.del(...keys);
          world.trace(`REDIS FLUSH (${keys.length} keys)`);
          break;
        }
        case 'clock-jump': {
          const ms = rng.between(1000, 120_000);
          world.now += ms;
          world.trace(`CLOCK JUMP +${ms}`);
          break;
        }
        case 'lease-expiry': {
          const p = rng.pick(cluster.projectors);
          if (p.proc.dead) break;
          p.proc.pausedUntil = world.now + rng.between(1000, 30_000);
          world.trace(`PAUSE ${p.proc.name} until ${p.proc.pausedUntil}; its leases expire`);
          await cluster.expireLeasesNow(p.owner);
          break;
        }
        case 'upstream-cut':
          model.cutNext = rng.between(1, 3);
          world.trace('UPSTREAM CUT');
          break;
        case 'crash': {
          const p = rng.pick(cluster.allProcs().filter((x) => !x.dead));
          if (p) world.crash(p, 'between steps');
          break;
        }
      }
    };
    const nOps = rng.between(50, 70);
    let started = 0;
    const pending = new Set<number>();
    const giveUps = rng.chance(0.5);
    world.within(callerProc, () => {
      let t = 0;
      for (let k = 0; k < nOps; k++) {
        t += rng.between(20, 600);
        setTimeout(() => {
          started++;
          pending.add(k);
          void operation(k).finally(() => {
            pending.delete(k);
            opsDone.n++;
          });
        }, t);
      }
    });

    const pickApi = () => {
      const live = cluster.liveApis();
      return live.length ? rng.pick(live) : null;
    };

    async function infer(k: number): Promise<void> {
      const ws = rng.pick(workspaces);
      const key = rng.pick(ws.keys);
      const streaming = rng.chance(0.3);
      const idem = rng.chance(0.6) ? `idem-${k}` : null;
      const body = {
        context: [{ type: 'Human', text: `Tell me story number ${k} about the sea.` }],
        config: 'service_3_pi',
        max_tokens: rng.between(5, 60),
      };
      const tries = idem ? rng.between(1, 3) : 1;
      for (let i = 0; i < tries; i++) {
        const api = pickApi();
        const a: Attempt = {
          op: k,
          attempt: i,
          streaming,
          idempotencyKey: idem,
          outcome: 'pending',
          received: '',
          redisLost: false,
          startedAt: world.now,
        };
        attempts.push(a);
        const lossesBefore = redisLosses;
        let out: CallOutcome;
        if (!api) out = { kind: 'reset' };
        else {
          out = await api.call(
            {
              method: 'POST',
              path: streaming ? '/external/api/inference/streaming' : '/external/api/inference',
              headers: {
                authorization: `Bearer ${key.secret}`,
                'x-request-id': `op${k}-a${i}`,
                ...(idem ? { 'idempotency-key': idem } : {}),
              },
              body,
              ...(giveUps && rng.chance(0.35) ? { giveUpAfterMs: rng.between(1, 1500) } : {}),
            },
            callerProc,
          );
        }
        a.endedAt = world.now;
        if (redisLosses !== lossesBefore) a.redisLost = true;
        if (out.kind === 'answer') {
          a.status = out.status;
          a.requestId = out.headers['x-request-id'];
          a.outcome = out.status === 200 ? (out.headers['idempotent-replayed'] ? 'replayed' : 'ok') : 'error';
          if (out.status === 200) a.received = out.body;
        } else a.outcome = out.kind;
        world.trace(
          `caller op${k}.${i} ${streaming ? 'stream' : 'whole'}${idem ? ' idem' : ''} → ${a.outcome}${a.status ? ` ${a.status}` : ''}`,
        );
        if (a.outcome === 'ok' || a.outcome === 'replayed') return;
        await new Promise((r) => setTimeout(r, rng.between(200, 3000)));
      }
    }

    async function operation(k: number): Promise<void> {
      const roll = rng.float();
      if (roll < 0.7) return infer(k);
      const api = pickApi();
      if (!api) return;
      const s = api.s;
      const ws = rng.pick(workspaces);
      const meta = { actor: ws.owner, correlationId: `op${k}` };
      // A use case on a process that dies never answers: the caller sees its connection reset.
      const run = <T>(f: () => Promise<T>) =>
        new Promise<T>((resolve, reject) => {
          if (api.proc.dead) return reject(Object.assign(new Error('connection refused'), { name: 'Reset' }));
          api.proc.onCrash.push(() => reject(Object.assign(new Error('connection reset'), { name: 'Reset' })));
          world.within(api.proc, f).then(resolve, reject);
        });
      try {
        if (roll < 0.8) {
          const idem = `dep-${k}`;
          const amount = parseUsd(String(rng.pick([10, 25, 50])));
          for (let i = 0; i < 2; i++) {
            try {
              await run(() => makeDeposit(s, { workspaceId: ws.id, idempotencyKey: idem, amount, by: ws.owner, metadata: meta }));
              world.trace(`caller op${k} deposit ok`);
              return;
            } catch (err) {
              world.trace(`caller op${k} deposit failed: ${(err as Error).name}`);
            }
          }
        } else if (roll < 0.9) {
          const enabled = rng.chance(0.8);
          const amount = rng.pick([10, 30, 60]);
          const threshold = rng.between(1, amount);
          await run(() =>
            configureAutoReload(s, {
              workspaceId: ws.id,
              enabled,
              threshold: parseUsd(String(threshold)),
              amount: parseUsd(String(amount)),
              monthlyCap: undefined,
              by: ws.owner,
              metadata: meta,
            }),
          );
          world.trace(`caller op${k} auto-reload ${enabled ? 'on' : 'off'}`);
        } else {
          const key = rng.pick(ws.keys);
          const budget = rng.chance(0.3) ? null : parseUsd(String(rng.pick([1, 5, 20])));
          await run(() => updateKey(s, { workspaceId: ws.id, keyId: key.keyId, budget, by: ws.owner, metadata: meta }));
          world.trace(`caller op${k} key budget ${budget}`);
        }
      } catch (err) {
        world.trace(`caller op${k} failed: ${(err as Error).name} ${(err as Error).message.slice(0, 80)}`);
      }
    }

    await world.run(world.now + 900_000, () => started === nOps && opsDone.n === nOps);
    if (opsDone.n < nOps) {
      const open = [...pending].map((k) => `op${k}`).join(', ');
      throw new SimFailure(
        'every-caller-answered',
        `after 15 simulated minutes ${nOps - opsDone.n} operations still wait for an answer: ${open}`,
      );
    }

    // ---- the faults stop: everything restarts, time passes, the cluster settles ----
    world.faultsOn = false;
    world.trace('FAULTS STOP');
    model.cutNext = 0;
    for (const p of cluster.allProcs()) p.pausedUntil = 0;
    cluster.restartAll();
    for (const owner of cluster.deadOwners) await cluster.expireLeasesNow(owner);
    await world.run(world.now + 30_000);
    world.now += config.SWEEPER_MIN_AGE_MS;
    world.trace('CLOCK JUMP past the sweeper age');
    await world.run(world.now + 3 * config.SWEEPER_INTERVAL_MS);

    // A guard's throw that the code swallowed (an api answers 503) is a defect of its own.
    const nondeterminism = mode.nondeterminismCaught();
    if (nondeterminism) throw new SimFailure('no-nondeterminism', nondeterminism);
    const broken = env.pool.broken as Error | null;
    if (broken) throw new Error(`a Redis connection broke: ${broken.message}`);
    const f = checkSafety(store.all, gateway.charges);
    checkCallers(f, attempts, store.all, config.SWEEPER_MIN_AGE_MS);
    const reader = cluster.apis.find((a) => !a.proc.dead)!;
    mode.leave();
    env.pool.world = null;
    const holds = new Reservations(env.admin, new Keyspace(config.REDIS_PREFIX));
    await checkLiveness(
      f,
      store.all,
      {
        open: async () => (await holds.openBefore(Number.MAX_SAFE_INTEGER)).map((r) => r.requestId),
        held: (ws) => holds.held(ws),
      },
      async (ws) => (await getBalance(reader.s.readModels, ws)).balance,
      redisLosses > 0,
    );
    result = finish(true);
  } catch (err) {
    const nondeterminism = mode.nondeterminismCaught();
    if (nondeterminism) {
      // The root cause of whatever broke after it: src/ read the real clock or randomness.
      result = finish(false, { invariant: 'no-nondeterminism', message: nondeterminism });
    } else if (!(err instanceof SimFailure)) {
      world.trace(`ERROR ${(err as Error).stack ?? String(err)}`);
      result = finish(false, { invariant: 'simulator-error', message: (err as Error).message });
    } else {
      // Not yet diagnosed: after Redis lost its data, some schedules end with a read model short of
      // the fold or a hold left. Reported apart (docs/TESTING.md, "Known open findings") until fixed.
      const open = redisLosses > 0 && (err.invariant === 'balance-equals-ledger' || err.invariant === 'no-hold-left');
      result = finish(false, { invariant: open ? `known:after-redis-loss:${err.invariant}` : err.invariant, message: err.message });
    }
  } finally {
    world.end();
    mode.leave();
    env.pool.world = null;
    await env.pool.recycle();
    const keys = await env.admin.keys(`${prefix}*`);
    if (keys.length) await env.admin.del(...keys);
  }
  return result;

  function finish(ok: boolean, failure?: { invariant: string; message: string }): ScheduleResult {
    if (failure) world.trace(`FAILED ${failure.invariant}: ${failure.message}`);
    return {
      seed,
      ok,
      ...(failure ? { failure } : {}),
      hash: world.traceHash(),
      trace: world.traceTail(150),
      steps: world.stepsRun,
      ops: nOpsOf(),
      apis,
      projectors,
      faults: [...world.faultCounts.keys()],
      virtualMs: world.now,
    };
  }
  function nOpsOf() {
    return opsDone.n;
  }
}
