import { BACKWARDS, END, EventStoreDBClient, FORWARDS, jsonEvent, NO_STREAM, START } from '@eventstore/db-client';
import type {
  AllStreamResolvedEvent,
  AppendExpectedRevision,
  JSONType,
  Position,
  ReadPosition,
  ReadRevision,
  ResolvedEvent,
} from '@eventstore/db-client';
import {
  AppendResult,
  assertAppendable,
  EventMetadata,
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
} from './port';

/**
 * EventStoreDB adapter over @eventstore/db-client 6.x (gRPC).
 *
 * Positions. A recorded event's `position` is its `$all` commit position (a byte offset in the
 * transaction log, not 1, 2, 3). The port speaks in one bigint, the client in `{ commit, prepare }`.
 * We turn a bigint `p` back into `{ commit: p, prepare: p }`. That is exact for every event written
 * through the gRPC API: EventStoreDB (v20+) writes each event of an append as its own committed prepare
 * record, and reports commit == prepare == that record's log position (see the server's AllReader), so
 * the bigint identifies one event. Only events from legacy TCP *explicit* transactions share one commit
 * position with a smaller prepare position; tollgate never writes those, and the adapter does not
 * support resuming in the middle of one. Inside one subscription the exact `{ commit, prepare }` of the
 * last delivered event is kept and used for resubscribing.
 *
 * Only real event positions (or 0n) may be given to `readAll` / `subscribeToAll`: the server refuses a
 * position inside a record, and so does this adapter (RangeError), never `position + 1`.
 *
 * System events (`$`-prefixed event types, or events in `$`-prefixed streams) are never returned:
 * the 6.x client has no server-side filter on reads, so they are skipped here.
 *
 * Re-sent event ids. The server checks ids durably only for an exact revision below the stream's
 * current one (or no_stream on an existing stream); an append AT the current revision is written
 * with no id check, and `any` / `stream_exists` consult an in-memory cache that forgets. The port
 * promises more (an id already in the stream is never written twice: a conflict at an exact
 * revision, the original result under `any` / `stream_exists`), so this adapter checks the ids
 * against the stream's history itself. History is immutable, so what it has seen of a stream
 * (revisions 0..n, from full reads and its own appends) is remembered in a bounded cache, and only the
 * part it has not seen is read; `any` / `stream_exists` become an exact-revision append after
 * reading the stream's last revision. Ids reused in ANOTHER stream are not checked (SQLite refuses them).
 *
 * Clusters. Appends and stream reads (the reads decisions rest on) ask for the leader; a NotLeader
 * makes the client reconnect to the leader for its next call, so they are retried once. Errors are
 * classified by `err.type`, which the renamed @kurrent/kurrentdb-client keeps, not by class.
 */

/** The part of the client this adapter uses; tests may inject a stand-in. */
export type EsdbClient = Pick<EventStoreDBClient, 'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'>;

export interface EsdbOptions {
  /** e.g. `esdb://localhost:2113?tls=false`. Ignored when `client` is given. */
  connectionString?: string;
  /** An existing client (not disposed by `close()`). */
  client?: EsdbClient;
  /** Upper bound on one append / ping, in ms; a write that times out has an unknown outcome. Default 10 000. */
  operationTimeoutMs?: number;
  /**
   * A read that receives nothing for this long is abandoned with StoreUnavailable (the 6.2.1 client
   * reads with no deadline at all). An idle limit, so a long read that keeps receiving is not cut. Default 10 000.
   */
  readTimeoutMs?: number;
  /** First resubscribe delay after a dropped subscription; doubles up to `maxResubscribeDelayMs`. Default 100. */
  resubscribeDelayMs?: number;
  /** Default 5 000. */
  maxResubscribeDelayMs?: number;
  /** Told about every subscription drop before the resubscribe (for logs and metrics). */
  onSubscriptionDropped?: (err: unknown, info: { attempt: number; delayMs: number; after: bigint | null }) => void;
  /** How many event ids of stream history to remember for the re-sent id check. Default 200 000. */
  historyCacheIds?: number;
  /** How long an append whose outcome is unknown may spend reading itself back before it fails. Default 5 000. */
  readBackTimeoutMs?: number;
}

const PAGE = 1000;
const PING_STREAM = 'tollgate-ping';
/** `any` / `stream_exists` appends that keep losing the race to other writers give up after this many tries. */
const ANY_ATTEMPTS = 20;

function toClientRevision(r: bigint | 'no_stream'): AppendExpectedRevision {
  return r === 'no_stream' ? NO_STREAM : r;
}

export function toClientPosition(p: bigint): Position {
  return { commit: p, prepare: p };
}

function samePosition(a: Position, b: Position): boolean {
  return a.commit === b.commit && a.prepare === b.prepare;
}

function comparePosition(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

type ClientRecorded = NonNullable<ResolvedEvent['event']>;

function isSystem(e: { type: string; streamId: string }): boolean {
  return e.type.startsWith('$') || e.streamId.startsWith('$');
}

/** Position of a resolved `$all` event: the record's own position, else the commit position of the read. */
function positionOf(r: AllStreamResolvedEvent | ResolvedEvent): Position | undefined {
  const p = r.event?.position ?? r.link?.position;
  if (p) return p;
  if (r.commitPosition !== undefined) return toClientPosition(r.commitPosition);
  return undefined;
}

function decode(value: unknown): unknown {
  if (value instanceof Uint8Array) {
    const text = Buffer.from(value).toString('utf8');
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return value;
}

function toRecorded(e: ClientRecorded, position: Position | undefined): RecordedEvent {
  const metadata = decode(e.metadata);
  return {
    id: e.id,
    stream: e.streamId,
    revision: e.revision,
    // Stream reads carry the $all position on servers >= 22.6; -1n marks "unknown" on older ones.
    position: position?.commit ?? -1n,
    type: e.type,
    data: decode(e.data),
    metadata: metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as EventMetadata) : {},
    created: e.created.toISOString(),
  };
}

/** The client's error kind (`err.type`), kept by @kurrent/kurrentdb-client too. */
function errorType(err: unknown): string | undefined {
  const t = (err as { type?: unknown } | null)?.type;
  return typeof t === 'string' ? t : undefined;
}

const UNAVAILABLE_TYPES = new Set(['unavailable', 'deadline-exceeded', 'not-leader', 'cancelled', 'timeout']);

/** Cluster discovery (multi-node or `esdb+discover://`) gives up with a plain Error. */
function isDiscoveryFailure(err: unknown): boolean {
  return err instanceof Error && errorType(err) === undefined && /^Failed to discover after \d+ attempts/.test(err.message);
}

/** Errors that mean "the store could not be reached or did not answer in time". */
export function isUnavailableError(err: unknown): boolean {
  if (err instanceof StoreUnavailable) return true;
  const type = errorType(err);
  if (type !== undefined) return UNAVAILABLE_TYPES.has(type);
  if (isDiscoveryFailure(err)) return true;
  // The server-features probe before an append rejects with the raw gRPC ServiceError.
  const code = (err as { code?: unknown } | null)?.code;
  return code === 14 /* UNAVAILABLE */ || code === 4 /* DEADLINE_EXCEEDED */ || code === 1 /* CANCELLED */ || code === 10; /* ABORTED */
}

function isInvalidPosition(err: unknown): boolean {
  return /invalid position/i.test((err as Error)?.message ?? '');
}

function unavailable(what: string, err: unknown): StoreUnavailable {
  if (err instanceof StoreUnavailable) return err;
  return new StoreUnavailable(`event store ${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

function mapReadError(what: string, err: unknown, position?: bigint): unknown {
  if (isUnavailableError(err)) return unavailable(what, err);
  if (position !== undefined && isInvalidPosition(err)) {
    return new RangeError(`position ${position} is not the position of an event in this store`, { cause: err });
  }
  return err;
}

class Timeout extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Timeout(`no answer within ${ms} ms`));
    }, ms);
  });
  // If the timer wins, a late rejection of `p` must not surface as an unhandled rejection.
  p.catch(() => undefined);
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

type CancelHooks = { cancel?: () => Promise<void>; destroy?: (err?: Error) => unknown };
type Cancellable<T = unknown> = AsyncIterable<T> & CancelHooks;

async function cancelQuietly(stream: CancelHooks): Promise<void> {
  try {
    await stream.cancel?.();
  } catch {
    /* already finished */
  }
  stream.destroy?.();
}

/**
 * Iterates a client read, abandoning it when nothing arrives for `idleMs` (the call is cancelled and
 * a Timeout thrown). `each` returns true to stop early.
 */
async function drain<T>(read: Cancellable<T>, idleMs: number, each: (item: T) => boolean | void): Promise<void> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void cancelQuietly(read);
    read.destroy?.(new Timeout(`no answer within ${idleMs} ms`));
  }, idleMs);
  try {
    for await (const item of read) {
      timer.refresh();
      if (each(item)) {
        await cancelQuietly(read);
        return;
      }
    }
  } catch (err) {
    if (timedOut) throw new Timeout(`no answer within ${idleMs} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) throw new Timeout(`no answer within ${idleMs} ms`);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What this adapter has seen of a stream's (immutable) history: the ids at revisions 0..through. */
interface History {
  through: bigint;
  /** id → revision and $all position (-1n when not known, e.g. inside a multi-event append). */
  ids: Map<string, { revision: bigint; position: bigint }>;
}

/** Streams' history, least recently used first, bounded by the total number of ids. */
class HistoryCache {
  private readonly streams = new Map<string, History>();
  private size = 0;
  constructor(private readonly maxIds: number) {}

  get(stream: string): History | undefined {
    const h = this.streams.get(stream);
    if (h) {
      this.streams.delete(stream);
      this.streams.set(stream, h);
    }
    return h;
  }

  /** Adds events that continue what is known (revision through+1, in order); anything else is ignored. */
  extend(stream: string, events: { id: string; revision: bigint; position: bigint }[]): void {
    let h = this.get(stream);
    for (const e of events) {
      const through = h?.through ?? -1n;
      if (e.revision !== through + 1n) {
        if (e.revision <= through && h?.ids.get(e.id) && e.position >= 0n) h.ids.get(e.id)!.position = e.position;
        continue;
      }
      if (!h) {
        h = { through: -1n, ids: new Map() };
        this.streams.set(stream, h);
      }
      h.ids.set(e.id, { revision: e.revision, position: e.position });
      h.through = e.revision;
      this.size++;
    }
    while (this.size > this.maxIds && this.streams.size > 0) {
      const [oldest, old] = this.streams.entries().next().value as [string, History];
      this.streams.delete(oldest);
      this.size -= old.ids.size;
    }
  }
}

export class EsdbEventStore implements EventStore {
  readonly kind = 'esdb' as const;
  private readonly client: EsdbClient;
  private readonly ownsClient: boolean;
  private readonly operationTimeoutMs: number;
  private readonly readBackTimeoutMs: number;
  private readonly readTimeoutMs: number;
  private readonly resubscribeDelayMs: number;
  private readonly maxResubscribeDelayMs: number;
  private readonly onSubscriptionDropped?: EsdbOptions['onSubscriptionDropped'];
  private readonly subscriptions = new Set<Subscription>();
  private readonly history: HistoryCache;
  private closed = false;
  private used = false;

  constructor(optsOrConnectionString: EsdbOptions | string) {
    const opts = typeof optsOrConnectionString === 'string' ? { connectionString: optsOrConnectionString } : optsOrConnectionString;
    if (opts.client) {
      this.client = opts.client;
      this.ownsClient = false;
    } else if (opts.connectionString) {
      try {
        this.client = EventStoreDBClient.connectionString(opts.connectionString);
      } catch (err) {
        throw new StoreUnavailable(`invalid EventStoreDB connection string: ${(err as Error).message}`, { cause: err });
      }
      this.ownsClient = true;
    } else {
      throw new TypeError('EsdbEventStore needs a connectionString or a client');
    }
    this.operationTimeoutMs = opts.operationTimeoutMs ?? 10_000;
    this.readBackTimeoutMs = opts.readBackTimeoutMs ?? 5_000;
    this.readTimeoutMs = opts.readTimeoutMs ?? 10_000;
    this.resubscribeDelayMs = opts.resubscribeDelayMs ?? 100;
    this.maxResubscribeDelayMs = opts.maxResubscribeDelayMs ?? 5_000;
    this.onSubscriptionDropped = opts.onSubscriptionDropped;
    this.history = new HistoryCache(opts.historyCacheIds ?? 200_000);
  }

  /** Runs `call` once more after a NotLeader: the client then points at the leader. */
  private async onLeader<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (errorType(err) !== 'not-leader') throw err;
      // The client resets its channel asynchronously after the failed call; let it.
      await pause(10);
      return call();
    }
  }

  async append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    assertAppendable(stream, events);
    this.assertOpen();
    const expected = opts.expectedRevision;
    if (expected === 'no_stream') return this.appendAt(stream, events, 'no_stream', expected);
    if (typeof expected === 'bigint') {
      await this.refuseStoredIds(stream, events, expected, expected);
      return this.appendAt(stream, events, expected, expected);
    }
    if (expected !== 'any' && expected !== 'stream_exists') throw new TypeError(`unknown expected revision ${String(expected)}`);
    // any / stream_exists: find the end of the stream, check the ids against its history, append there.
    let last: bigint | 'no_stream' = 'no_stream';
    for (let attempt = 0; attempt < ANY_ATTEMPTS; attempt++) {
      last = await this.lastRevision(stream);
      if (last === 'no_stream') {
        if (expected === 'stream_exists') throw new WrongExpectedVersion(stream, expected, 'no_stream');
      } else {
        const replay = await this.findReplay(stream, events, last, expected);
        if (replay) return replay;
      }
      try {
        return await this.appendAt(stream, events, last, expected);
      } catch (err) {
        if (!(err instanceof WrongExpectedVersion)) throw err;
        // Another writer got in between: look again.
      }
    }
    throw new WrongExpectedVersion(stream, expected, last);
  }

  /** One append with an exact revision (or no_stream), as the server does it. */
  private async appendAt(stream: string, events: NewEvent[], at: bigint | 'no_stream', reported: ExpectedRevision): Promise<AppendResult> {
    const proposed = events.map((e) =>
      jsonEvent({ id: e.id, type: e.type, data: e.data as JSONType, metadata: (e.metadata ?? {}) as JSONType }),
    );
    let result;
    try {
      // The deadline travels to the server, which gives up the write after it; our own timer is a
      // backstop for a server that does not answer at all.
      result = await this.onLeader(() =>
        withTimeout(
          this.client.appendToStream(stream, proposed, {
            expectedRevision: toClientRevision(at),
            requiresLeader: true,
            deadline: this.operationTimeoutMs,
          }),
          this.operationTimeoutMs + 1_000,
        ),
      );
    } catch (err) {
      if (errorType(err) === 'wrong-expected-version') {
        const actual = (err as { actualVersion?: bigint | 'no_stream' }).actualVersion;
        throw new WrongExpectedVersion(stream, reported, typeof actual === 'bigint' ? actual : 'no_stream');
      }
      if (err instanceof Timeout || isUnavailableError(err)) {
        // The write may have landed (the connection dropped after it was sent): read it back first.
        const landed = await this.readBack(stream, events, at);
        if (landed) return landed;
        throw unavailable('write', err);
      }
      throw err;
    }
    const next = result.nextExpectedRevision;
    // The server reports the position of the last event written (or found, on an idempotent retry).
    let position = result.position?.commit;
    if (position === undefined) position = (await this.positionOfRevision(stream, next)) ?? -1n;
    const first = next - BigInt(events.length) + 1n;
    this.history.extend(
      stream,
      events.map((e, i) => ({ id: e.id, revision: first + BigInt(i), position: i === events.length - 1 ? position : -1n })),
    );
    return { nextExpectedRevision: next, position };
  }

  /**
   * After a write whose outcome is unknown: reads the revisions it was to take, retrying while the
   * server cannot be reached (until readBackTimeoutMs). The same ids there, in order: it landed, and
   * this is its result. Anything else (or no answer in time): null, the caller fails the append.
   * A write the server is still working on when the read answers can land after it; the server's own
   * write timeout (the deadline sent with every append) bounds that window.
   */
  private async readBack(stream: string, events: NewEvent[], at: bigint | 'no_stream'): Promise<AppendResult | null> {
    const from = at === 'no_stream' ? 0n : at + 1n;
    const deadline = Date.now() + this.readBackTimeoutMs;
    for (let backoff = 25; ; backoff = Math.min(backoff * 2, 500)) {
      try {
        const read = await this.readStream(stream, { from, maxCount: events.length });
        const landed = read.length === events.length && read.every((r, i) => r.id === events[i].id);
        if (!landed) return null;
        const last = read[read.length - 1];
        return { nextExpectedRevision: last.revision, position: last.position };
      } catch (err) {
        if (!isUnavailableError(err) || this.closed || Date.now() + backoff > deadline) return null;
        await pause(backoff);
      }
    }
  }

  /** Only when the server reported no position (an idempotent write whose event it could not read). */
  private async positionOfRevision(stream: string, revision: bigint): Promise<bigint | undefined> {
    try {
      const [e] = await this.readStream(stream, { from: revision, maxCount: 1 });
      return e?.position;
    } catch {
      return undefined; /* best effort: the write itself succeeded */
    }
  }

  private async lastRevision(stream: string): Promise<bigint | 'no_stream'> {
    const [last] = await this.readStream(stream, { direction: 'backwards', maxCount: 1 });
    return last ? last.revision : 'no_stream';
  }

  /** The stream's history through `upTo` (or its end, if shorter), reading only what is not known yet. */
  private async historyThrough(stream: string, upTo: bigint): Promise<History | undefined> {
    const known = this.history.get(stream);
    const through = known?.through ?? -1n;
    if (through < upTo) {
      // readStream records what it reads (forwards, contiguous with what is known).
      await this.readStream(stream, { from: through + 1n, maxCount: Number(upTo - through) });
    }
    return this.history.get(stream);
  }

  /** An exact-revision append of ids that are already at or before that revision is a conflict. */
  private async refuseStoredIds(stream: string, events: NewEvent[], at: bigint, reported: ExpectedRevision): Promise<void> {
    const h = await this.historyThrough(stream, at);
    // Ids after `at` are the server's to judge: the idempotent retry of an earlier append.
    if (!h || !events.some((e) => (h.ids.get(e.id)?.revision ?? at + 1n) <= at)) return;
    throw new WrongExpectedVersion(stream, reported, await this.lastRevision(stream));
  }

  /** Under any / stream_exists: the same events, in order, already at the end of the known history. */
  private async findReplay(stream: string, events: NewEvent[], last: bigint, reported: ExpectedRevision): Promise<AppendResult | null> {
    const h = await this.historyThrough(stream, last);
    if (!h) return null;
    const found = events.map((e) => h.ids.get(e.id));
    if (found.every((f) => f === undefined)) return null;
    const start = found[0]?.revision;
    const replay = start !== undefined && found.every((f, i) => f !== undefined && f.revision === start + BigInt(i));
    if (!replay) throw new WrongExpectedVersion(stream, reported, last);
    const end = found[found.length - 1]!;
    const position = end.position >= 0n ? end.position : ((await this.positionOfRevision(stream, end.revision)) ?? -1n);
    return { nextExpectedRevision: end.revision, position };
  }

  async readStream(stream: string, opts: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    if (opts.maxCount !== undefined && opts.maxCount <= 0) return [];
    const direction = opts.direction === 'backwards' ? BACKWARDS : FORWARDS;
    const fromRevision: ReadRevision = opts.from ?? (direction === BACKWARDS ? END : START);
    let out: RecordedEvent[] = [];
    try {
      await this.onLeader(async () => {
        out = [];
        const read = this.client.readStream(stream, {
          fromRevision,
          direction,
          maxCount: opts.maxCount ?? Number.MAX_SAFE_INTEGER,
          requiresLeader: true,
        });
        await drain(read as unknown as Cancellable<ResolvedEvent>, this.readTimeoutMs, (r) => {
          if (r.event) out.push(toRecorded(r.event, positionOf(r)));
        });
      });
    } catch (err) {
      // The client reports a missing stream while iterating, not when the read is started.
      if (errorType(err) === 'stream-not-found') return [];
      if (err instanceof Timeout) throw unavailable('read', err);
      throw mapReadError('read', err);
    }
    if (direction === FORWARDS) this.history.extend(stream, out);
    return out;
  }

  async readAll(opts: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const max = opts.maxCount ?? Number.MAX_SAFE_INTEGER;
    const out: RecordedEvent[] = [];
    if (max <= 0) return out;
    let cursor: ReadPosition = opts.fromPosition !== undefined && opts.fromPosition > 0n ? toClientPosition(opts.fromPosition) : START;
    // $all reads are inclusive; after the first page the cursor is the last record already seen.
    let skip: Position | null = null;
    try {
      for (;;) {
        const pageSize = Math.min(PAGE, max - out.length + (skip ? 1 : 0));
        const read = this.client.readAll({ fromPosition: cursor, maxCount: pageSize });
        let n = 0;
        let last: Position | null = null;
        let full = false;
        await drain(read as unknown as Cancellable<AllStreamResolvedEvent>, this.readTimeoutMs, (r) => {
          n++;
          const pos = positionOf(r);
          if (!pos) return false;
          if (skip && samePosition(pos, skip)) return false;
          last = pos;
          if (!r.event || isSystem(r.event)) return false;
          out.push(toRecorded(r.event, pos));
          full = out.length >= max;
          return full;
        });
        if (full || n < pageSize || !last) return out;
        cursor = last;
        skip = last;
      }
    } catch (err) {
      if (err instanceof Timeout) throw unavailable('read', err);
      throw mapReadError('read', err, opts.fromPosition);
    }
  }

  async headPosition(): Promise<bigint> {
    this.assertOpen();
    let cursor: ReadPosition = END;
    let skip: Position | null = null;
    const pageSize = 100;
    try {
      for (;;) {
        const read = this.client.readAll({ fromPosition: cursor, direction: BACKWARDS, maxCount: pageSize });
        let n = 0;
        let last: Position | null = null;
        let head: bigint | null = null;
        await drain(read as unknown as Cancellable<AllStreamResolvedEvent>, this.readTimeoutMs, (r) => {
          n++;
          const pos = positionOf(r);
          if (!pos || (skip && samePosition(pos, skip))) return false;
          last = pos;
          if (r.event && !isSystem(r.event)) head = pos.commit;
          return head !== null;
        });
        if (head !== null) return head;
        if (n < pageSize || !last) return 0n;
        cursor = last;
        skip = last;
      }
    } catch (err) {
      if (err instanceof Timeout) throw unavailable('read', err);
      throw mapReadError('read', err);
    }
  }

  async ping(): Promise<void> {
    this.assertOpen();
    try {
      const read = this.client.readStream(PING_STREAM, { maxCount: 1 });
      await drain(read as unknown as Cancellable, Math.min(this.operationTimeoutMs, 5_000), () => true);
    } catch (err) {
      if (errorType(err) === 'stream-not-found') return;
      if (err instanceof Timeout) throw unavailable('ping', err);
      throw mapReadError('ping', err);
    }
  }

  subscribeToAll(opts: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    const store = this;
    // Exclusive start. `after` 0n (an empty store's head) means "from the beginning".
    let last: Position | null = opts.after !== undefined && opts.after > 0n ? toClientPosition(opts.after) : null;
    let stopped = false;
    let current: ReturnType<EsdbClient['subscribeToAll']> | null = null;
    let wakeSleep: (() => void) | null = null;

    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wakeSleep = () => {
          clearTimeout(timer);
          resolve();
        };
      }).finally(() => {
        wakeSleep = null;
      });

    async function* iterate(): AsyncGenerator<RecordedEvent> {
      // Resets only when the server delivers something: a confirmation alone proves nothing (the
      // server confirms before failing on a bad position or access).
      let attempt = 0;
      try {
        while (!stopped) {
          const sub = store.client.subscribeToAll({ fromPosition: last ?? START });
          current = sub;
          let failure: unknown = new StoreUnavailable('subscription ended by the server');
          try {
            for await (const r of sub as AsyncIterable<AllStreamResolvedEvent>) {
              if (stopped) return;
              attempt = 0;
              const pos = positionOf(r);
              if (!pos) continue;
              // Never deliver twice, whatever the server does at the start point of a resubscription.
              if (last && comparePosition(pos, last) <= 0) continue;
              last = pos;
              if (!r.event || isSystem(r.event)) continue;
              yield toRecorded(r.event, pos);
              if (stopped) return;
            }
          } catch (err) {
            if (stopped) return;
            // Only a store that cannot be reached is worth waiting for; anything else is the caller's.
            if (!isUnavailableError(err)) throw mapReadError('subscription', err, last?.commit ?? undefined);
            failure = unavailable('subscription', err);
          } finally {
            current = null;
            sub.unsubscribe().catch(() => undefined);
            sub.destroy();
          }
          if (stopped) return;
          const delayMs = Math.min(store.resubscribeDelayMs * 2 ** attempt, store.maxResubscribeDelayMs);
          attempt++;
          try {
            store.onSubscriptionDropped?.(failure, { attempt, delayMs, after: last?.commit ?? null });
          } catch {
            /* a logging hook must not kill the subscription */
          }
          await sleep(delayMs);
        }
      } finally {
        stopped = true;
        store.subscriptions.delete(subscription);
      }
    }

    const it = iterate();
    const subscription: Subscription = {
      [Symbol.asyncIterator]: () => it,
      close: async () => {
        if (stopped) return;
        stopped = true;
        store.subscriptions.delete(subscription);
        wakeSleep?.();
        const sub = current;
        if (sub) {
          // Cancelling the gRPC call does not end the client's stream object: destroy it too, so a
          // pending `for await` wakes up and the generator finishes.
          try {
            await sub.unsubscribe();
          } catch {
            /* already gone */
          }
          sub.destroy();
        }
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.subscriptions].map((s) => s.close()));
    if (!this.ownsClient) return;
    try {
      await this.client.dispose();
      // dispose() cancels open calls but leaves the gRPC channel open; close it as well.
      const withChannel = this.client as unknown as { getChannel?: () => Promise<{ close(): void }> };
      if (this.used && withChannel.getChannel) (await withChannel.getChannel()).close();
    } catch {
      /* closing is best effort */
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreUnavailable('event store is closed');
    this.used = true;
  }
}
