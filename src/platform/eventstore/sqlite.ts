import Database from 'better-sqlite3';
import { EventEmitter, once } from 'node:events';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  AppendResult,
  assertJsonSafe,
  assertNotEmpty,
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
import { recordedFromJson } from './decode';
import { BatchWriter, Encoded, openDatabase, openWriter, WireError, WriteOutcome, WriteRequest, WriterMessage } from './sqlite-writer';

export { SCHEMA } from './sqlite-writer';

/**
 * The embedded event store: one SQLite file, WAL, synchronous=FULL, one `events` table whose
 * autoincrement rowid is the global position.
 *
 * Appends are written by a worker thread (sqlite-writer.ts) so that the COMMIT's fsync never blocks
 * the event loop; reads run here on a connection of their own (WAL: readers never wait for the
 * writer). Other processes may append to the same file (a CLI, a second role): subscriptions poll
 * for them, and are woken at once by appends made through this instance.
 */

/** Rows are read as arrays (`.raw()`), in this column order: cheaper than one object per row. */
const COLUMNS = 'position, event_id, stream_id, stream_revision, type, data, metadata, created';
/** How many streams' last committed revision the store remembers (see `committed`). */
const COMMITTED_STREAMS = 4096;

type Row = [
  position: bigint,
  eventId: string,
  streamId: string,
  revision: bigint,
  type: string,
  data: string,
  metadata: string,
  created: string,
];

function encode(e: NewEvent): Encoded {
  return { id: e.id, type: e.type, data: toJson(e.data, `${e.type}.data`), metadata: toJson(e.metadata ?? {}, `${e.type}.metadata`) };
}

/**
 * One pass over the value: JSON.stringify refuses a bigint itself, and only then is the value walked
 * again (assertJsonSafe) for the error that names where the bigint is.
 */
function toJson(value: unknown, path: string): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    assertJsonSafe(value, path);
    throw err;
  }
}

export interface SqliteOptions {
  /** Path to the database file. */
  file: string;
  /** How often an idle subscription looks for events appended by other processes. */
  pollIntervalMs?: number;
  /** Clock for `created`; injectable for tests. */
  now?: () => Date;
  /**
   * Group commit (default on): appends made together (in one synchronous run, or while the writer
   * is busy with the batch before) are written in one BEGIN IMMEDIATE transaction with one fsync,
   * each in its own savepoint, so each append still succeeds or fails on its own (a conflict rolls
   * back only that append). A promise resolves only after the COMMIT. Off: one transaction per append.
   */
  groupCommit?: boolean;
}

interface PendingAppend {
  request: WriteRequest;
  resolve: (r: AppendResult) => void;
  reject: (err: unknown) => void;
}

/**
 * mkdir -p without `mkdirSync(dir, { recursive: true })`: on Node 20 that call never returns (it spins
 * at full CPU) when mkdir reports ENOENT under an existing parent, e.g. DATA_DIR=/proc/nope.
 */
function ensureDir(dir: string): void {
  try {
    mkdirSync(dir);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code !== 'ENOENT') throw err;
  }
  const parent = dirname(dir);
  if (parent === dir) throw new Error(`cannot create directory ${dir}`);
  ensureDir(parent);
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

function fromWire(e: WireError): Error {
  if (e.kind === 'conflict') return new WrongExpectedVersion(e.stream, e.expected, e.actual);
  const cause = Object.assign(new Error(e.message), e.code ? { code: e.code } : {});
  if (e.kind === 'unavailable') return new StoreUnavailable(`event store write failed: ${e.message}`, { cause });
  return Object.assign(cause, { name: e.name });
}

/**
 * The writer on this thread, for code bundled into one file (no thread entry file beside it): the
 * same batches and outcomes, but each COMMIT's fsync blocks the event loop again.
 */
class InlineWriter extends EventEmitter {
  private readonly writer: BatchWriter;

  constructor(file: string, groupCommit: boolean) {
    super();
    this.writer = openWriter(file, groupCommit);
  }

  postMessage(m: WriterMessage): void {
    setImmediate(() => {
      if (m.type === 'append') return void this.emit('message', this.writer.write(m.batch));
      this.writer.close();
      this.emit('exit', 0);
    });
  }

  ref(): void {}
  unref(): void {}
  async terminate(): Promise<number> {
    return 0;
  }
}

type Writer = Worker | InlineWriter;

/** The writer thread: compiled JavaScript beside this file, or (tests, tsx) the TypeScript source through tsx. */
function startWriter(file: string, groupCommit: boolean): Writer {
  const entry = join(__dirname, `sqlite-writer-thread${extname(__filename)}`);
  if (!existsSync(entry)) return new InlineWriter(file, groupCommit);
  const workerData = { file, groupCommit };
  if (entry.endsWith('.ts')) {
    return new Worker(`require('tsx/cjs'); require(${JSON.stringify(entry)});`, { eval: true, workerData });
  }
  return new Worker(entry, { workerData });
}

export class SqliteEventStore implements EventStore {
  readonly kind = 'sqlite' as const;
  /** The read connection (the writer thread has its own). */
  private readonly db: Database.Database;
  private readonly file: string;
  private readonly appended = new EventEmitter();
  private readonly pollIntervalMs: number;
  private readonly now: () => Date;
  private closed = false;
  private readonly stmts;
  private readonly groupCommit: boolean;
  private writer: Writer | null = null;
  private seq = 0;
  /** Appends sent to the writer, by sequence number, until their outcome comes back. */
  private readonly inflight = new Map<number, PendingAppend>();
  private drained: (() => void) | null = null;
  /** Appends waiting to go to the writer, sent as one message (the next batch). */
  private queue: WriteRequest[] = [];
  private batchInFlight = false;
  /** Sequence numbers of the appends not yet resolved, per stream (in append order). */
  private readonly pendingByStream = new Map<string, Set<number>>();
  /** Reads waiting for the appends to their stream that were made before them. */
  private readonly readers = new Map<string, Array<{ upTo: number; go: () => void }>>();
  private flushQueued = false;
  /** The highest position committed whose subscribers have not been woken yet (-1n: none). */
  private wakeAt = -1n;
  private wakeQueued = false;
  /**
   * The last revision this store committed, per stream, for the streams it wrote most recently
   * (oldest forgotten first): what lets the check before the trip (staleConflict) skip the read.
   */
  private readonly committed = new Map<string, bigint>();

  constructor(opts: SqliteOptions) {
    this.file = opts.file;
    this.pollIntervalMs = opts.pollIntervalMs ?? 25;
    this.groupCommit = opts.groupCommit ?? true;
    this.now = opts.now ?? (() => new Date());
    this.appended.setMaxListeners(0);
    try {
      if (opts.file !== ':memory:') ensureDir(dirname(opts.file));
      this.db = openDatabase(opts.file);
    } catch (err) {
      throw new StoreUnavailable(`cannot open SQLite event store at ${opts.file}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const db = this.db;
    this.stmts = {
      readFwd: db
        .prepare(`SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND stream_revision >= ? ORDER BY stream_revision ASC LIMIT ?`)
        .safeIntegers(true)
        .raw(true),
      readBwd: db
        .prepare(`SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND stream_revision <= ? ORDER BY stream_revision DESC LIMIT ?`)
        .safeIntegers(true)
        .raw(true),
      readAll: db.prepare(`SELECT ${COLUMNS} FROM events WHERE position >= ? ORDER BY position ASC LIMIT ?`).safeIntegers(true).raw(true),
      head: db.prepare('SELECT COALESCE(MAX(position), 0) AS p FROM events').safeIntegers(true),
      lastRevision: db.prepare('SELECT MAX(stream_revision) AS r FROM events WHERE stream_id = ?').safeIntegers(true),
      idStored: db.prepare('SELECT 1 FROM events WHERE event_id = ?'),
    };
  }

  /**
   * An append whose expected revision is already behind what is committed can only fail (revisions
   * never go back), unless it re-sends stored ids (an idempotent retry, which the writer judges).
   * Refusing it here spares it the trip to the writer: under contention, losers learn at once and
   * re-read instead of queueing behind the COMMIT that made them lose. The revision is read before
   * the id, so an id committed together with that revision is seen.
   */
  private staleConflict(stream: string, events: Encoded[], expected: ExpectedRevision): WrongExpectedVersion | null {
    if (expected === 'any' || events.length === 0) return null;
    // Only where this store's own commits say the append is behind is the file read: most appends
    // (a new request's stream, the next revision of one) are not, and a read per append cost 2% of
    // the hot path's CPU. An append made stale by another process is refused by the writer instead.
    const known = this.committed.get(stream);
    if (known === undefined || !(expected === 'no_stream' || (typeof expected === 'bigint' && known > expected))) return null;
    const last = (this.stmts.lastRevision.get(stream) as { r: bigint | null }).r;
    const ok = expected === 'no_stream' ? last === null : last === null ? expected >= 0n : last <= expected;
    if (ok || this.stmts.idStored.get(events[0].id)) return null;
    // An expected outcome under contention, refused by the thousand: no stack trace to capture.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return new WrongExpectedVersion(stream, expected, last ?? 'no_stream');
    } finally {
      Error.stackTraceLimit = limit;
    }
  }

  /**
   * Resolves only after the append's COMMIT (synchronous=FULL) in the writer thread. One batch is
   * with the writer at a time; appends made meanwhile (while its COMMIT's fsync runs) collect into
   * the next. Group commit (default): a batch is one transaction and one fsync, each append in its
   * own savepoint, so each still succeeds or fails on its own. Off: one transaction per append.
   */
  async append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    assertNotEmpty(stream, events);
    // Serialized here, before the write lock is taken.
    const encoded = events.map(encode);
    this.assertOpen();
    const request: WriteRequest = {
      seq: ++this.seq,
      stream,
      events: encoded,
      expected: opts.expectedRevision,
      created: this.now().toISOString(),
    };
    return new Promise<AppendResult>((resolve, reject) => this.send({ request, resolve, reject }));
  }

  private send(p: PendingAppend): void {
    this.inflight.set(p.request.seq, p);
    const pending = this.pendingByStream.get(p.request.stream);
    if (pending) pending.add(p.request.seq);
    else this.pendingByStream.set(p.request.stream, new Set([p.request.seq]));
    this.queue.push(p.request);
    // With the writer idle the batch leaves once the caller's synchronous work is done (a microtask),
    // not a loop turn later: on the inference path the COMMIT then starts before the upstream call
    // is even built, and runs beside it. Appends of the same synchronous run still go together;
    // with a batch at the writer they wait for its outcome (resolveBatch flushes): the next group.
    if (!this.batchInFlight && !this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(this.flush);
    }
  }

  /**
   * Sends the queued appends to the writer thread as one batch, unless a batch is still there (its
   * settling sends the next). Appends that waited can only have lost if what is committed has
   * already moved past their expected revision: those are refused here, at once, so that under
   * contention on one stream the losers re-read right away instead of filling a batch that fails.
   */
  private readonly flush = (): void => {
    this.flushQueued = false;
    if (this.batchInFlight || this.queue.length === 0) return;
    const batch: WriteRequest[] = [];
    const later: WriteRequest[] = [];
    const streams = new Set<string>();
    for (const r of this.queue) {
      // A second append to a stream at a checked revision waits for the next batch: if the first
      // lands, this one is refused here without a trip to the writer.
      if (r.expected !== 'any' && streams.has(r.stream)) {
        later.push(r);
        continue;
      }
      const stale = this.staleConflict(r.stream, r.events, r.expected);
      if (!stale) {
        batch.push(r);
        streams.add(r.stream);
      } else {
        this.inflight.get(r.seq)?.reject(stale);
        this.inflight.delete(r.seq);
        this.done(r);
      }
    }
    this.queue = later;
    if (batch.length === 0) return this.afterBatch();
    this.batchInFlight = true;
    const writer = this.ensureWriter();
    writer.ref(); // appends in flight keep the process alive
    writer.postMessage({ type: 'append', batch } satisfies WriterMessage);
  };

  private ensureWriter(): Writer {
    if (this.writer) return this.writer;
    const w = startWriter(this.file, this.groupCommit);
    w.on('message', (out: WriteOutcome[]) => this.resolveBatch(out));
    const fail = (reason: string) => {
      if (this.writer !== w) return;
      this.writer = null;
      this.failInflight(new StoreUnavailable(`event store writer stopped: ${reason}`));
    };
    w.on('error', (err) => fail(err.message));
    w.on('exit', (code) => fail(`exit code ${code}`));
    this.writer = w;
    return w;
  }

  private resolveBatch(out: WriteOutcome[]): void {
    this.batchInFlight = false;
    let head = -1n;
    for (const o of out) {
      const p = this.inflight.get(o.seq);
      if (!p) continue;
      this.inflight.delete(o.seq);
      this.done(p.request);
      if ('ok' in o) {
        this.noteCommitted(p.request.stream, o.ok.nextExpectedRevision);
        if (o.ok.position > head) head = o.ok.position;
        p.resolve(o.ok);
      } else {
        p.reject(fromWire(o.err));
      }
    }
    if (head >= 0n) this.wakeSubscribers(head);
    this.flush();
    this.afterBatch();
  }

  /**
   * Subscriptions (the in-process projector) are woken a turn later (setImmediate): the appenders'
   * continuations run first. Woken at once, a subscription's read of the new rows and its batch's
   * work ran between a commit and the first byte its request was waiting for.
   */
  private wakeSubscribers(head: bigint): void {
    if (head > this.wakeAt) this.wakeAt = head;
    if (this.wakeQueued) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      const at = this.wakeAt;
      this.wakeAt = -1n;
      this.appended.emit('appended', at);
    });
  }

  private noteCommitted(stream: string, revision: bigint): void {
    const prev = this.committed.get(stream);
    if (prev !== undefined) {
      if (prev >= revision) return;
      this.committed.delete(stream);
    } else if (this.committed.size >= COMMITTED_STREAMS) {
      this.committed.delete(this.committed.keys().next().value!);
    }
    this.committed.set(stream, revision);
  }

  /** Forgets a resolved append and lets go the reads of its stream that no longer wait for anything. */
  private done(r: WriteRequest): void {
    const pending = this.pendingByStream.get(r.stream);
    if (!pending) return;
    pending.delete(r.seq);
    if (pending.size === 0) this.pendingByStream.delete(r.stream);
    const waiting = this.readers.get(r.stream);
    if (!waiting) return;
    const oldest = pending.size ? pending.values().next().value! : Infinity;
    const still = waiting.filter((w) => (w.upTo >= oldest ? true : (w.go(), false)));
    if (still.length) this.readers.set(r.stream, still);
    else this.readers.delete(r.stream);
  }

  private failInflight(err: Error): void {
    this.batchInFlight = false;
    this.queue = [];
    for (const p of this.inflight.values()) p.reject(err);
    this.inflight.clear();
    this.pendingByStream.clear();
    for (const waiting of this.readers.values()) for (const w of waiting) w.go();
    this.readers.clear();
    this.afterBatch();
  }

  private afterBatch(): void {
    if (this.inflight.size > 0) return;
    this.writer?.unref(); // an idle writer never keeps the process alive
    this.drained?.();
  }

  /**
   * Sees every append to the stream made through this store before the read: a read that finds one
   * still with the writer waits for it (at most one COMMIT). A decider that reads, decides and
   * appends at an exact revision then rarely loses to an append it could not see.
   */
  async readStream(stream: string, opts: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const pending = this.pendingByStream.get(stream);
    if (pending) {
      const upTo = this.seq;
      await new Promise<void>((go) => {
        const waiting = this.readers.get(stream);
        if (waiting) waiting.push({ upTo, go });
        else this.readers.set(stream, [{ upTo, go }]);
      });
      this.assertOpen();
    }
    const max = opts.maxCount ?? Number.MAX_SAFE_INTEGER;
    const rows =
      opts.direction === 'backwards'
        ? (this.stmts.readBwd.all(stream, opts.from ?? BigInt(Number.MAX_SAFE_INTEGER), max) as Row[])
        : (this.stmts.readFwd.all(stream, opts.from ?? 0n, max) as Row[]);
    return rows.map(toRecorded);
  }

  async readAll(opts: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readAllSync(opts.fromPosition ?? 0n, opts.maxCount ?? Number.MAX_SAFE_INTEGER, opts.decode);
  }

  private readAllSync(from: bigint, max: number, decode?: ReadonlySet<string>): RecordedEvent[] {
    const rows = this.stmts.readAll.all(from, max) as Row[];
    const events = new Array<RecordedEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      events[i] = recordedFromJson(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], decode);
    }
    return events;
  }

  private head(): bigint {
    return (this.stmts.head.get() as { p: bigint }).p;
  }

  async headPosition(): Promise<bigint> {
    this.assertOpen();
    return this.head();
  }

  async ping(): Promise<void> {
    this.assertOpen();
    try {
      this.db.prepare('SELECT 1').get();
    } catch (err) {
      throw new StoreUnavailable(`event store unreachable: ${(err as Error).message}`, { cause: err });
    }
  }

  subscribeToAll(opts: SubscribeOptions = {}): Subscription {
    let position = opts.after ?? 0n;
    let stopped = false;
    let wake: (() => void) | null = null;
    const onAppend = () => wake?.();
    this.appended.on('appended', onAppend);
    const store = this;
    const batch = 1000;

    async function* iterate(): AsyncGenerator<RecordedEvent> {
      try {
        while (!stopped && !store.closed) {
          const events = store.readAllSync(position + 1n, batch, opts.decode);
          for (const e of events) {
            if (stopped) return;
            position = e.position;
            yield e;
          }
          if (events.length < batch) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, store.pollIntervalMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = null;
          }
        }
      } finally {
        store.appended.off('appended', onAppend);
      }
    }
    const it = iterate();
    return {
      [Symbol.asyncIterator]: () => it,
      close: async () => {
        stopped = true;
        wake?.();
        this.appended.off('appended', onAppend);
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Appends already accepted are written before the file is closed.
    this.flush();
    this.closed = true;
    if (this.inflight.size > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    this.drained = null;
    const w = this.writer;
    this.writer = null;
    if (w) {
      const exited = once(w, 'exit');
      w.postMessage({ type: 'close' } satisfies WriterMessage);
      const timer = setTimeout(() => void w.terminate(), 5000);
      await exited.catch(() => undefined);
      clearTimeout(timer);
    }
    this.appended.emit('appended', -1n);
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreUnavailable('event store is closed');
  }
}

function toRecorded(r: Row): RecordedEvent {
  return recordedFromJson(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], undefined);
}
