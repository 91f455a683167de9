import {
  AppendResult,
  assertAppendable,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StoreUnavailable,
  SubscribeOptions,
  Subscription,
  WrongExpectedVersion,
} from '../../src/platform/eventstore/port';
import type { Outcome, World } from './world';

/**
 * An in-memory event store with the port's contract (exact revisions, idempotent re-sends by event
 * id, inclusive reads, positions 1, 2, 3…). In a simulation every call is a world step, so the
 * simulator decides when it lands and how it ends: an append may be refused (StoreUnavailable,
 * nothing written), land with its answer lost (StoreUnavailable, written: the outcome-unknown case
 * of the real adapters), land twice (the adapter's retry with the same ids), or the caller may die
 * before or after it. Without a world every call is applied at once.
 */

const APPEND_FAULTS: readonly Outcome[] = ['delay', 'unavailable', 'ack_lost', 'crash_before', 'crash_after', 'twice'];
const READ_FAULTS: readonly Outcome[] = ['delay', 'unavailable', 'crash_before'];
const SUB_FAULTS: readonly Outcome[] = ['delay'];

interface AppendRecord {
  stream: string;
  ids: string[];
  expected: ExpectedRevision;
  result: AppendResult;
}

export class SimEventStore implements EventStore {
  readonly kind = 'sqlite' as const;
  readonly all: RecordedEvent[] = [];
  private readonly streams = new Map<string, RecordedEvent[]>();
  private readonly appends = new Map<string, AppendRecord>();
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly world: World | null,
    private readonly clock: () => number = () => 0,
  ) {}

  private gate<T>(label: string, allowed: readonly Outcome[], apply: () => T): Promise<T> {
    if (!this.world) {
      try {
        return Promise.resolve(apply());
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.world.call('store', label, null, allowed, apply, (o) => new StoreUnavailable(`event store unavailable (simulated: ${o})`));
  }

  append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    try {
      assertAppendable(stream, events);
    } catch (e) {
      return Promise.reject(e);
    }
    // What the adapter sends is serialised at the call: later changes to the caller's objects are not stored.
    const sent = events.map((e) => ({ id: e.id, type: e.type, data: JSON.stringify(e.data), metadata: JSON.stringify(e.metadata ?? {}) }));
    return this.gate(`append ${stream} ${events.map((e) => e.type).join('+')}`, APPEND_FAULTS, () =>
      this.applyAppend(stream, sent, opts.expectedRevision),
    );
  }

  private applyAppend(
    stream: string,
    events: Array<{ id: string; type: string; data: string; metadata: string }>,
    expected: ExpectedRevision,
  ): AppendResult {
    const current = this.streams.get(stream) ?? [];
    const actual: bigint | 'no_stream' = current.length === 0 ? 'no_stream' : BigInt(current.length - 1);
    const seen = events.filter((e) => this.appends.has(e.id));
    if (seen.length > 0) {
      const rec = this.appends.get(events[0].id);
      const same = rec && rec.stream === stream && rec.ids.length === events.length && rec.ids.every((id, i) => id === events[i].id);
      const loose = expected === 'any' || expected === 'stream_exists';
      if (same && (loose || expected === rec.expected)) return rec.result;
      throw new WrongExpectedVersion(stream, expected, actual);
    }
    const ok =
      expected === 'any' ||
      (expected === 'no_stream' && actual === 'no_stream') ||
      (expected === 'stream_exists' && actual !== 'no_stream') ||
      (typeof expected === 'bigint' && actual !== 'no_stream' && expected === actual);
    if (!ok) throw new WrongExpectedVersion(stream, expected, actual);
    const created = new Date(this.clock()).toISOString();
    const written: RecordedEvent[] = events.map((e, i) => ({
      id: e.id,
      stream,
      revision: BigInt(current.length + i),
      position: BigInt(this.all.length + i + 1),
      type: e.type,
      data: JSON.parse(e.data) as unknown,
      metadata: JSON.parse(e.metadata) as RecordedEvent['metadata'],
      created,
    }));
    current.push(...written);
    this.streams.set(stream, current);
    this.all.push(...written);
    const last = written[written.length - 1];
    const result = { nextExpectedRevision: last.revision, position: last.position };
    this.appends.set(events[0].id, { stream, ids: events.map((e) => e.id), expected, result });
    for (const e of events.slice(1)) this.appends.set(e.id, { stream, ids: [], expected, result });
    for (const wake of [...this.waiting]) wake();
    return result;
  }

  readStream(stream: string, opts: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    return this.gate(`read ${stream}`, READ_FAULTS, () => {
      const events = this.streams.get(stream) ?? [];
      const back = opts.direction === 'backwards';
      let out = back ? [...events].reverse() : [...events];
      if (opts.from !== undefined) out = out.filter((e) => (back ? e.revision <= opts.from! : e.revision >= opts.from!));
      if (opts.maxCount !== undefined) out = out.slice(0, opts.maxCount);
      return out.map(copy);
    });
  }

  readAll(opts: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    return this.gate(`readAll from ${opts.fromPosition ?? 0n}`, READ_FAULTS, () =>
      this.slice(opts.fromPosition ?? 0n, opts.maxCount ?? Infinity, true),
    );
  }

  private slice(from: bigint, max: number, inclusive: boolean): RecordedEvent[] {
    const start = Number(from) - (inclusive ? 1 : 0);
    return this.all.slice(Math.max(0, start), Math.max(0, start) + Math.min(max, this.all.length)).map(copy);
  }

  headPosition(): Promise<bigint> {
    return this.gate('head', READ_FAULTS, () => BigInt(this.all.length));
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  subscribeToAll(opts: SubscribeOptions = {}): Subscription {
    let position = opts.after ?? 0n;
    let buffer: RecordedEvent[] = [];
    let closed = false;
    let wakeClosed: (() => void) | null = null;
    const store = this;
    // The subscriber's own process: a wake-up from another process's append must not run as that one.
    const owner = this.world?.current();
    const fill = (): Promise<void> =>
      new Promise<void>((resolve) => {
        if (closed) return resolve();
        if (BigInt(store.all.length) > position) {
          // One step hands the subscriber what is there (a live read may be delayed, never lost).
          const read = store.gate(`subscription after ${position}`, SUB_FAULTS, () => {
            buffer = store.slice(position, 100, false);
            if (buffer.length) position = buffer[buffer.length - 1].position;
          });
          read.then(resolve, resolve);
          return;
        }
        const wake = () => {
          store.waiting.delete(wake);
          wakeClosed = null;
          const go = () => void fill().then(resolve);
          if (owner && store.world) store.world.within(owner, go);
          else go();
        };
        store.waiting.add(wake);
        wakeClosed = () => {
          store.waiting.delete(wake);
          resolve();
        };
      });
    return {
      [Symbol.asyncIterator]() {
        return {
          async next(): Promise<IteratorResult<RecordedEvent>> {
            while (!closed && buffer.length === 0) await fill();
            if (closed) return { done: true, value: undefined };
            return { done: false, value: buffer.shift()! };
          },
          async return(): Promise<IteratorResult<RecordedEvent>> {
            closed = true;
            wakeClosed?.();
            return { done: true, value: undefined };
          },
        };
      },
      async close() {
        closed = true;
        wakeClosed?.();
      },
    };
  }
}

function copy(e: RecordedEvent): RecordedEvent {
  return { ...e, data: structuredClone(e.data), metadata: structuredClone(e.metadata) };
}
