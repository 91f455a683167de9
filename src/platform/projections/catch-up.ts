import type { RecordedEvent } from '../eventstore/port';
import type { ProjectionState } from './apply-batch';
import type { RunnerOptions } from './runner-options';
import { PreparedBatch, reactedTypes, startBatch, typesRead } from './runner-batch';

/** What the catch-up needs of the runner it works for. */
export interface CatchUpHost {
  readonly opts: RunnerOptions;
  /** False once the runner stops: the catch-up then returns after the batch in flight. */
  running(): boolean;
  /** Position every projection has reached. */
  minCheckpoint(): bigint;
  readonly state: ReadonlyMap<string, ProjectionState>;
  send(batch: PreparedBatch): Promise<void>;
  react(events: RecordedEvent[], through?: bigint): Promise<void>;
  markCaughtUp(): Promise<void>;
}

/**
 * Events per batch while catching up: a larger batch sums more of its increments per field
 * (bench:projector: Redis CPU per event 55 → 43 µs from 2,000 to 10,000) and costs fewer round trips.
 */
const CATCH_UP_BATCH = 10_000;

/**
 * Events per read while catching up: a batch is built from several reads, each applied as it
 * comes, so only one read's events (and the next, read ahead) are alive at once, not two whole
 * batches: the garbage collector copies what is alive (bench:projector: projector CPU per event
 * 23.0 → 21.4 µs side by side with reads of 2,500 against 10,000, Redis's unchanged: the MULTI still
 * holds 10,000 events; reads of 1,000 were no worse).
 */
const CATCH_UP_READ = 1_000;

/**
 * A catch-up batch also ends, between reads, once its MULTI holds this many commands. Most events
 * become a few batched scripts per batch (ProjectionTx.hincrby, evalEach), but some projections queue
 * their own command per event (tx.multi: sign-ups, keys, deposits), and each is an ioredis command
 * with its promises alive until the MULTI's reply: a 10,000-event batch of such history held ~50,000
 * (bench:projector's first 20,000 events: 71 → 56 µs of projector CPU per event with this limit).
 */
const CATCH_UP_COMMANDS = 3_000;

/**
 * Reads straight from the store in large batches until the head: fast start after downtime.
 * Three things overlap: the store reads the batch after next, this process builds the next
 * batch's MULTI, and Redis applies the current one (on a free core each would otherwise wait for
 * the others). A built batch is sent only once the one before it committed, and only if the
 * checkpoints are then what it was built from; its WATCH is sent just before it.
 */
export async function catchUp(r: CatchUpHost): Promise<void> {
  const size = Math.max(r.opts.batchSize, CATCH_UP_BATCH);
  const chunk = Math.min(size, CATCH_UP_READ);
  // Only paces a log line: a monotonic clock of the process, not the service clock.
  let lastLog = performance.now();
  // Up to the head seen on entry: under constant writes the live subscription takes over from there.
  const head = await r.opts.store.headPosition();
  const decode = typesRead(r.opts);
  const read = (from: bigint) =>
    r.opts.store.readAll({ fromPosition: from, maxCount: chunk + 1, decode }).then((es) => es.filter((e) => e.position > from));
  const reacts = reactedTypes(r.opts.reactors);
  let next: Promise<RecordedEvent[]> | null = null;
  // The batch whose MULTI is in flight, the events its reactors see, and the checkpoints it leaves once committed.
  let inflight: { done: Promise<void>; events: RecordedEvent[]; last: bigint; leaves: Map<string, bigint> } | null = null;
  const settle = async () => {
    const f = inflight;
    inflight = null;
    if (!f) return;
    await f.done;
    await r.react(f.events, f.last);
  };
  try {
    let from = r.minCheckpoint();
    for (;;) {
      if (!r.running()) return await settle();
      if (from >= head) {
        await settle();
        return await r.markCaughtUp();
      }
      if (performance.now() - lastLog > 2000) {
        lastLog = performance.now();
        r.opts.log.info({ position: from.toString(), head: head.toString() }, 'projections catching up');
      }
      // One batch, from reads of `chunk` events applied as they come (the next one read ahead).
      const builder = startBatch(r.opts, r.state, false, inflight?.leaves);
      const reacted: RecordedEvent[] = [];
      let count = 0;
      let last = from;
      while (count < size && builder.queued() < CATCH_UP_COMMANDS) {
        // A turn of the event loop before each read: with a store that reads synchronously
        // (SQLite) the whole next batch was otherwise built before the batch in flight saw its
        // WATCH's reply, so its MULTI went out only then, and Redis and this process took turns
        // instead of working at once (PostgreSQL's reads wait on I/O, which gave that turn).
        await new Promise<void>((resolve) => setImmediate(resolve));
        const events = await (next ?? read(last));
        next = null;
        if (events.length === 0) break;
        last = events[events.length - 1].position;
        if (last < head) next = read(last);
        builder.add(events);
        // Reactors are handed only the types they handle; their checkpoints still move to `last`.
        if (reacts.size > 0) for (const e of events) if (reacts.has(e.type)) reacted.push(e);
        count += events.length;
        if (last >= head) break;
      }
      if (count === 0) {
        await settle();
        return await r.markCaughtUp();
      }
      const batch = builder.finish();
      const expected = inflight?.leaves;
      await settle();
      // If the checkpoints are elsewhere now than the batch was built from, read again from there.
      if (expected && [...expected].some(([name, cp]) => r.state.get(name)?.checkpoint !== cp)) {
        next?.catch(() => undefined);
        next = null;
        from = r.minCheckpoint();
        continue;
      }
      inflight = { done: r.send(batch), events: reacted, last, leaves: batch.next };
      from = last;
    }
  } finally {
    // A read ahead that is not used must not surface as an unhandled rejection.
    next?.catch(() => undefined);
    await (inflight as { done: Promise<void> } | null)?.done.catch(() => undefined);
  }
}
