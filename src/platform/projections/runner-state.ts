import { loadProjectionState, type ProjectionState } from './apply-batch';
import type { RunnerOptions } from './runner-options';

/**
 * (Re)loads what a runner holds of Redis: each projection's generation and checkpoint, and each
 * reactor's checkpoint. Called at start and whenever a batch found Redis other than it thought.
 */
export async function loadRunnerState(
  opts: RunnerOptions,
  state: Map<string, ProjectionState>,
  reactorCheckpoints: Map<string, bigint>,
): Promise<void> {
  const { redis, ks, projections, reactors = [] } = opts;
  for (const p of projections) {
    const before = state.get(p.name);
    const now = await loadProjectionState(redis, ks, p.name);
    // Same generation but an older checkpoint (or the pointer gone): Redis lost its data. The
    // ready marker goes until the catch-up from the store is done, so the api answers 503.
    const lost = before && ((now.gen === before.gen && now.checkpoint < before.checkpoint) || (now.gen === '0' && before.gen !== '0'));
    if (lost) {
      await redis.del(ks.ready(p.name));
      opts.log.warn(
        { projection: p.name, checkpoint: now.checkpoint.toString() },
        'Redis lost this read model; rebuilding it from the event store',
      );
      opts.onStateLost?.(p.name);
    }
    state.set(p.name, now);
  }
  for (const r of reactors) {
    const cp = await redis.get(ks.reactorCheckpoint(r.name));
    if (cp !== null) reactorCheckpoints.set(r.name, BigInt(cp));
    else {
      // A reactor seen for the first time starts at the head: a fresh Redis must never re-run
      // the side effects of history (charges are decided from the ledger anyway).
      const head = await opts.store.headPosition();
      await redis.set(ks.reactorCheckpoint(r.name), head.toString());
      reactorCheckpoints.set(r.name, head);
    }
  }
}
