import { Queue } from 'bullmq';
import type { PlatformServices as Services } from '../services';
import { projectionStatus } from '../projections/status';
import { globEscape } from '../projections/generations';
import { scanAll } from '../redis';
import { bullPrefix } from '../bullmq';

/**
 * Gauges read at scrape time from the source of truth: projection checkpoints and lag (Redis and
 * the event store), open reservations (Redis), BullMQ queue depth per state.
 */
export async function registerCollectors(
  s: Services,
  opts: { projections: string[]; queues: string[] },
): Promise<{ close(): Promise<void> }> {
  const m = s.metrics;
  const statuses = async () => projectionStatus(s.store, s.redis, s.ks, opts.projections, s.config.PROJECTION_PARTITIONS);

  m.gauge('tollgate_projection_checkpoint', 'Last event-store position applied, per projection', ['projection'], async (g) => {
    for (const st of await statuses()) g.set({ projection: st.name }, Number(st.checkpoint));
  });
  m.gauge(
    'tollgate_projection_lag_events',
    'Event-store head minus the checkpoint (positions; events on SQLite)',
    ['projection'],
    async (g) => {
      for (const st of await statuses()) g.set({ projection: st.name }, Number(st.lag));
    },
  );
  // With PROJECTION_PARTITIONS > 1 (the gauge above is then the lowest partition's).
  m.gauge(
    'tollgate_projection_partition_lag_events',
    'Head minus the checkpoint, per projection and partition',
    ['projection', 'partition'],
    async (g) => {
      for (const st of await statuses())
        for (const p of st.partitions ?? []) g.set({ projection: st.name, partition: String(p.partition) }, Number(p.lag));
    },
  );
  m.gauge(
    'tollgate_projection_lag_seconds',
    'Age of the oldest event the projection has not applied yet (0 when caught up)',
    ['projection'],
    async (g) => {
      const now = s.now().getTime();
      for (const st of await statuses()) {
        let lag = 0;
        if (st.lag !== '0') {
          const from = BigInt(st.checkpoint);
          const next = (await s.store.readAll({ fromPosition: from, maxCount: 2 })).find((e) => e.position > from);
          if (next) lag = Math.max(0, (now - Date.parse(next.created)) / 1000);
        }
        g.set({ projection: st.name }, lag);
      }
    },
  );
  m.gauge(
    'tollgate_projection_ready',
    '1 once the projector caught the read model up since Redis last lost it',
    ['projection'],
    async (g) => {
      if (!opts.projections.length) return;
      const marks = await s.redis.mget(...opts.projections.map((n) => s.ks.ready(n)));
      opts.projections.forEach((n, i) => g.set({ projection: n }, marks[i] === null ? 0 : 1));
    },
  );
  m.gauge(
    'tollgate_reservations_open',
    'Inference reservations currently held (requests in flight or awaiting the sweeper)',
    [],
    async (g) => {
      // Each workspace's index (resv-open:{ws:<id>}, billing's reservation keys), on every primary.
      let n = 0;
      await scanAll(s.redis, `${globEscape(s.ks.shared('resv-open'))}:{ws:*`, async (node, keys) => {
        for (const k of keys) n += await node.zcard(k);
      });
      g.set(n);
    },
  );

  const conn = await s.connectRedis('metrics-queues', { maxRetriesPerRequest: null });
  const queues = opts.queues.map((name) => new Queue(name, { connection: conn, prefix: bullPrefix(s.config, name) }));
  m.gauge('tollgate_queue_jobs', 'BullMQ jobs per queue and state (waiting, active, delayed, failed)', ['queue', 'state'], async (g) => {
    for (const q of queues) {
      const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'failed');
      for (const [state, n] of Object.entries(counts)) g.set({ queue: q.name, state }, n);
    }
  });
  return {
    async close() {
      for (const q of queues) await q.close().catch(() => undefined);
    },
  };
}
