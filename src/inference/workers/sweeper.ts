import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { decideSweep } from '../metering';
import type { Prices } from '../metering';
import { streams } from '../../platform/streams';
import { EventStore, WrongExpectedVersion } from '../../platform/eventstore/port';
import type { Logger } from '../../platform/log';
import { BALANCES, Reservations } from '../../billing';
import { Keyspace } from '../../platform/projections/keyspace';
import { ReadModels } from '../../platform/projections/read-models';
import { fnv1a, PartitionKeyspace } from '../../platform/projections/partitions';
import type { Services } from '../../services';
import { bullPrefix } from '../../platform/bullmq';

/**
 * The sweeper: no reservation stays open after its request's process died.
 *
 * For every reservation older than SWEEPER_MIN_AGE_MS (longer than a request can run, including
 * the background retries of a completion), it reads `inference-{requestId}`:
 * - no InferenceRequested: the request never reached the store → release the hold;
 * - InferenceRequested without a debit: the process died while generating → append
 *   InferenceCompleted (finishReason 'abandoned', the prompt billed, no output) + TokensDebited at
 *   exact revision 0 (a late live request or a second sweeper loses the race: one debit only);
 *   the projector releases the hold when it applies the debit;
 * - already debited: the projector releases the hold when it gets there; if the balances
 *   projection already passed the debit and the hold is still there, it is stale: release it.
 */
export interface SweepDeps {
  store: EventStore;
  redis: Redis;
  ks: Keyspace;
  prices: Prices;
  now: () => Date;
  newId: () => string;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** PROJECTION_PARTITIONS (default 1): the balances checkpoint that says a debit was applied is its workspace's partition's. */
  partitions?: number;
}

export interface SweepReport {
  released: number;
  closed: number;
  /** Debited, waiting for the projector. */
  waiting: number;
}

export async function sweepAbandoned(d: SweepDeps, opts: { minAgeMs: number; limit?: number }): Promise<SweepReport> {
  const reservations = new Reservations(d.redis, d.ks, () => d.now().getTime());
  const now = d.now();
  const open = await reservations.openBefore(now.getTime() - opts.minAgeMs, opts.limit ?? 500);
  const report: SweepReport = { released: 0, closed: 0, waiting: 0 };
  for (const { workspaceId, requestId } of open) {
    const stream = streams.inference(requestId);
    const events = await d.store.readStream(stream);
    const decision = decideSweep(events, d.prices, now);
    switch (decision.kind) {
      case 'release':
        await reservations.release(workspaceId, requestId);
        report.released++;
        d.log.warn({ requestId, workspaceId }, 'sweeper released a reservation whose request was never recorded');
        break;
      case 'close':
        try {
          await d.store.append(
            stream,
            decision.events.map((e) => ({
              id: d.newId(),
              type: e.type,
              data: e.data,
              metadata: { actor: 'system:sweeper', correlationId: requestId },
            })),
            { expectedRevision: 0n },
          );
          report.closed++;
          d.log.warn({ requestId, workspaceId }, 'sweeper closed an abandoned inference request');
        } catch (err) {
          if (!(err instanceof WrongExpectedVersion)) throw err;
          report.waiting++; // closed meanwhile by its own process
        }
        break;
      case 'debited': {
        const gen = await new ReadModels(d.redis, d.ks).gen(BALANCES);
        // With partitions there is no whole-stream checkpoint: read the one of the partition that applies this workspace's events.
        const n = d.partitions ?? 1;
        const pks = new PartitionKeyspace(d.ks.prefix, n > 1 ? fnv1a(workspaceId) % n : 0, n);
        const checkpoint = BigInt((await d.redis.get(pks.checkpoint(BALANCES, gen))) ?? '0');
        if (checkpoint >= decision.position) {
          await reservations.release(workspaceId, requestId);
          report.released++;
        } else report.waiting++;
        break;
      }
    }
  }
  return report;
}

export const SWEEPER_QUEUE = 'inference-sweeper';

/** The repeatable BullMQ job (queue prefix bullPrefix(config, SWEEPER_QUEUE)) that runs sweepAbandoned. */
export async function startSweeper(s: Services): Promise<{ close(): Promise<void> }> {
  const prefix = bullPrefix(s.config, SWEEPER_QUEUE);
  const queueConn = await s.connectRedis('sweeper-queue', { maxRetriesPerRequest: null });
  const workerConn = await s.connectRedis('sweeper-worker', { maxRetriesPerRequest: null });
  const queue = new Queue(SWEEPER_QUEUE, { connection: queueConn, prefix });
  // Connection errors surface through the commands that fail; without a listener BullMQ prints
  // each one's stack to stderr.
  queue.on('error', () => undefined);
  const schedule = () =>
    queue.upsertJobScheduler(
      'sweep',
      { every: s.config.SWEEPER_INTERVAL_MS },
      { name: 'sweep', opts: { removeOnComplete: 50, removeOnFail: 50 } },
    );
  await schedule();
  const log = s.log.child({ part: 'sweeper' });
  const deps: SweepDeps = {
    store: s.store,
    redis: s.redis,
    ks: s.ks,
    prices: {
      inputNanoUsdPerToken: s.config.PRICE_INPUT_NANO_USD_PER_TOKEN,
      outputNanoUsdPerToken: s.config.PRICE_OUTPUT_NANO_USD_PER_TOKEN,
    },
    now: s.now,
    newId: s.newId,
    log,
    partitions: s.config.PROJECTION_PARTITIONS,
  };
  const sweep = async () => {
    const report = await sweepAbandoned(deps, { minAgeMs: s.config.SWEEPER_MIN_AGE_MS });
    for (const [action, n] of Object.entries(report)) if (n) s.metrics.sweeperClosed.inc({ action }, n);
    return report;
  };
  const worker = new Worker(SWEEPER_QUEUE, sweep, {
    connection: workerConn,
    prefix,
    concurrency: 1,
  });
  worker.on('failed', (_job, err) => log.error({ err }, 'sweep failed'));
  worker.on('error', (err) => log.error({ err }, 'sweeper worker error'));
  // The schedule lives only in Redis: a Redis that lost its data (flushed, restarted empty) would
  // stop the sweeper for good. Checked on every reconnect and periodically, re-created if gone.
  const reassert = () =>
    void queue
      .getJobScheduler('sweep')
      .then((existing) => (existing ? undefined : schedule().then(() => log.warn('the sweep schedule was gone from Redis; re-created it'))))
      .catch((err: Error) => log.warn({ err: err.message }, 'could not re-assert the sweep schedule; will retry'));
  queueConn.on('ready', reassert);
  const timer = setInterval(reassert, Math.max(1000, Math.min(s.config.SWEEPER_INTERVAL_MS, 30_000)));
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      queueConn.off('ready', reassert);
      await worker.close();
      await queue.close();
    },
  };
}
