import type { RecordedEvent } from '../eventstore/port';
import type { ChainableCommander } from 'ioredis';
import { ProjectionBatch, ProjectionState } from './apply-batch';
import type { Reactor } from './projection';
import type { RunnerOptions } from './runner-options';
import { Expected, guardBatch } from './switch-over';

/*
 * How the projection runner builds a batch: one MULTI holding every projection's changes and
 * checkpoint behind a guard (switch-over.ts), and which events' data it needs parsed at all.
 */

/** One batch's pipeline (guard, MULTI, the batch), built but not sent, and the checkpoints it leaves. */
export interface PreparedBatch {
  multi: ChainableCommander | null;
  next: Map<string, bigint>;
  last: bigint;
  /** The fencing token the batch is guarded with ('' without a fence; null: the runner held none). */
  token: string | null;
}

/** A batch built from events given in one or more parts (add), then finished into its MULTI. */
export interface BatchBuilder {
  add(events: readonly RecordedEvent[]): void;
  /** Commands queued in the MULTI so far. */
  queued(): number;
  finish(): PreparedBatch;
}

/**
 * Starts one batch's MULTI (every projection's changes and checkpoint), guarded by the checkpoints
 * in `state`, or by `from` (those a batch still in flight will leave). Nothing is sent.
 */
export function startBatch(
  opts: Pick<RunnerOptions, 'redis' | 'ks' | 'projections' | 'fence'>,
  state: ReadonlyMap<string, ProjectionState>,
  live: boolean,
  from?: ReadonlyMap<string, bigint>,
): BatchBuilder {
  const { redis, ks, projections } = opts;
  let last = 0n;
  const lastOf = (events: readonly RecordedEvent[]) => {
    if (events.length > 0) last = events[events.length - 1].position;
  };
  if (projections.length === 0) return { add: lastOf, queued: () => 0, finish: () => ({ multi: null, next: new Map(), last, token: '' }) };
  const expected: Expected = projections.map((p) => {
    const st = state.get(p.name)!;
    return { name: p.name, gen: st.gen, checkpoint: from ? (from.get(p.name) ?? st.checkpoint) : st.checkpoint };
  });
  const multi = redis.pipeline();
  const token = guardBatch(multi, ks, expected, opts.fence);
  const parts = token === null ? [] : projections.map((p, i) => new ProjectionBatch(ks, p, expected[i], multi, live));
  return {
    add(events) {
      lastOf(events);
      // Projection by projection within each part: a projection's own commands keep event order
      // (different projections write different keys, so how their parts interleave changes nothing).
      for (const part of parts) part.add(events);
    },
    queued: () => multi.length,
    finish() {
      const next = new Map<string, bigint>();
      if (token === null) return { multi: null, next, last, token };
      projections.forEach((p, i) => next.set(p.name, parts[i].finish(multi)));
      return { multi, next, last, token };
    },
  };
}

/** The event types some reactor handles. */
export function reactedTypes(reactors: readonly Reactor[] = []): ReadonlySet<string> {
  const types = new Set<string>();
  for (const r of reactors) for (const t of r.handles) types.add(t);
  return types;
}

/**
 * The event types whose data the runner's projections and reactors read: the store may leave the
 * others' JSON unparsed (ReadAllOptions.decode), which is most of the traffic. Anything else that
 * looks into an event still gets the same value, parsed when read. A partition's runner (`owns`)
 * has every event left unparsed: most are other partitions', whose workspace it reads from the
 * JSON text (partitionOf), and its own are parsed when its projections first read them.
 */
export function typesRead(opts: Pick<RunnerOptions, 'projections' | 'reactors' | 'owns'>): ReadonlySet<string> {
  const types = new Set<string>();
  if (opts.owns) return types;
  for (const p of opts.projections) for (const t of p.handles) types.add(t);
  for (const r of opts.reactors ?? []) for (const t of r.handles) types.add(t);
  return types;
}
