import Database from 'better-sqlite3';
import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  AppendResult,
  assertJsonSafe,
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
 * The embedded event store: one SQLite file, WAL, synchronous=FULL, one `events` table whose
 * autoincrement rowid is the global position.
 *
 * Other processes may append to the same file (a CLI, a second role): subscriptions poll for them,
 * and are woken at once by appends made through this instance.
 */

/** Rows are read as arrays (`.raw()`), in this column order: cheaper than one object per row. */
const COLUMNS = 'position, event_id, stream_id, stream_revision, type, data, metadata, created';
type Row = [position: bigint, eventId: string, streamId: string, revision: bigint, type: string, data: string, metadata: string, created: string];

/** An event with data and metadata already serialized. */
interface Encoded {
  id: string;
  type: string;
  data: string;
  metadata: string;
}

function encode(e: NewEvent): Encoded {
  assertJsonSafe(e.data, `${e.type}.data`);
  assertJsonSafe(e.metadata ?? {}, `${e.type}.metadata`);
  return { id: e.id, type: e.type, data: JSON.stringify(e.data), metadata: JSON.stringify(e.metadata ?? {}) };
}

/** The one table of the store; the bench's raw inserts use it too, so both write the same indexes. */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position        INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id        TEXT    NOT NULL,
  stream_id       TEXT    NOT NULL,
  stream_revision INTEGER NOT NULL,
  type            TEXT    NOT NULL,
  data            TEXT    NOT NULL,
  metadata        TEXT    NOT NULL,
  created         TEXT    NOT NULL,
  UNIQUE (stream_id, stream_revision),
  UNIQUE (event_id)
);`;

export interface SqliteOptions {
  /** Path to the database file. */
  file: string;
  /** How often an idle subscription looks for events appended by other processes. */
  pollIntervalMs?: number;
  /** Clock for `created`; injectable for tests. */
  now?: () => Date;
  /**
   * Group commit (default on): appends made in the same event-loop turn are written in one
   * BEGIN IMMEDIATE transaction with one fsync, each in its own savepoint, so each append still
   * succeeds or fails on its own (a conflict rolls back only that append). A promise resolves only
   * after the COMMIT. Off: one transaction per append.
   */
  groupCommit?: boolean;
}

interface PendingAppend {
  stream: string;
  events: Encoded[];
  expected: ExpectedRevision;
  resolve: (r: AppendResult) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: AppendResult } | { err: unknown };

const UNAVAILABLE_CODES = new Set([
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_READONLY',
  'SQLITE_CANTOPEN',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
]);

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

function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return [...UNAVAILABLE_CODES].some((c) => code.startsWith(c));
}

function mapWriteError(err: unknown): unknown {
  if (err instanceof WrongExpectedVersion) return err;
  if (isUnavailable(err)) return new StoreUnavailable(`event store write failed: ${(err as Error).message}`, { cause: err });
  return err;
}

export class SqliteEventStore implements EventStore {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly appended = new EventEmitter();
  private readonly pollIntervalMs: number;
  private readonly now: () => Date;
  private closed = false;
  private readonly stmts;
  private readonly appendImmediate: (stream: string, events: Encoded[], expected: ExpectedRevision) => AppendResult;
  /** The same, nested inside a group transaction: better-sqlite3 wraps it in a SAVEPOINT. */
  private readonly appendNested: (stream: string, events: Encoded[], expected: ExpectedRevision) => AppendResult;
  private readonly commitGroup: (batch: PendingAppend[], out: Outcome[]) => void;
  private readonly groupCommit: boolean;
  private queue: PendingAppend[] = [];
  private flushScheduled: NodeJS.Immediate | null = null;

  constructor(opts: SqliteOptions) {
    this.pollIntervalMs = opts.pollIntervalMs ?? 25;
    this.groupCommit = opts.groupCommit ?? true;
    this.now = opts.now ?? (() => new Date());
    this.appended.setMaxListeners(0);
    try {
      if (opts.file !== ':memory:') ensureDir(dirname(opts.file));
      this.db = new Database(opts.file);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('busy_timeout = 5000');
      this.db.exec(SCHEMA);
    } catch (err) {
      throw new StoreUnavailable(`cannot open SQLite event store at ${opts.file}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const db = this.db;
    this.stmts = {
      lastRevision: db.prepare('SELECT MAX(stream_revision) AS r FROM events WHERE stream_id = ?').safeIntegers(true),
      byEventId: db
        .prepare('SELECT stream_id, stream_revision, position FROM events WHERE event_id = ?')
        .safeIntegers(true),
      insert: db.prepare(
        'INSERT INTO events (event_id, stream_id, stream_revision, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      readFwd: db
        .prepare(`SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND stream_revision >= ? ORDER BY stream_revision ASC LIMIT ?`)
        .safeIntegers(true)
        .raw(true),
      readBwd: db
        .prepare(`SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND stream_revision <= ? ORDER BY stream_revision DESC LIMIT ?`)
        .safeIntegers(true)
        .raw(true),
      readAll: db
        .prepare(`SELECT ${COLUMNS} FROM events WHERE position >= ? ORDER BY position ASC LIMIT ?`)
        .safeIntegers(true)
        .raw(true),
      head: db.prepare('SELECT COALESCE(MAX(position), 0) AS p FROM events').safeIntegers(true),
    };
    // Built once: db.transaction() allocates wrappers on every call.
    const tx = db.transaction(this.appendTx);
    this.appendImmediate = tx.immediate;
    this.appendNested = tx;
    this.commitGroup = db.transaction((batch: PendingAppend[], out: Outcome[]) => {
      for (const p of batch) {
        try {
          out.push({ ok: this.appendNested(p.stream, p.events, p.expected) });
        } catch (err) {
          // This append's savepoint is rolled back; the others go on. A failing disk aborts them all.
          if (!(err instanceof WrongExpectedVersion) && isUnavailable(err)) throw err;
          out.push({ err: mapWriteError(err) });
        }
      }
    }).immediate;
  }

  /**
   * Runs inside BEGIN IMMEDIATE. The common case (an exact revision or no_stream that matches) costs
   * one index lookup and the inserts: an id that is already stored is caught by UNIQUE(event_id) and
   * only then looked up. `any` / `stream_exists` look the ids up first (best-effort idempotency).
   */
  private readonly appendTx = (stream: string, events: Encoded[], expected: ExpectedRevision): AppendResult => {
    const last = (this.stmts.lastRevision.get(stream) as { r: bigint | null }).r;
    const ok =
      expected === 'any' ||
      (expected === 'no_stream' && last === null) ||
      (expected === 'stream_exists' && last !== null) ||
      (typeof expected === 'bigint' && last === expected);
    if (!ok || expected === 'any' || expected === 'stream_exists') {
      const replay = this.findIdempotentReplay(stream, events, expected);
      if (replay) return replay;
      if (!ok) throw new WrongExpectedVersion(stream, expected, last ?? 'no_stream');
    }
    if (events.length === 0) return { nextExpectedRevision: last ?? -1n, position: this.head() };
    const created = this.now().toISOString();
    let revision = last ?? -1n;
    let position = 0n;
    for (const e of events) {
      revision += 1n;
      let info: Database.RunResult;
      try {
        info = this.stmts.insert.run(e.id, stream, revision, e.type, e.data, e.metadata, created);
      } catch (err) {
        // An id that is already stored elsewhere: a conflict (the transaction rolls back).
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
          this.findIdempotentReplay(stream, events, expected);
          throw new WrongExpectedVersion(stream, expected, last ?? 'no_stream');
        }
        throw err;
      }
      position = BigInt(info.lastInsertRowid);
    }
    return { nextExpectedRevision: revision, position };
  };

  /**
   * Same ids re-sent: if they were all written to this stream, in this order, where the expected
   * revision says they should have gone, the retry succeeds and writes nothing. Any other reuse of
   * an id is a conflict.
   */
  private findIdempotentReplay(stream: string, events: Encoded[], expected: ExpectedRevision): AppendResult | null {
    if (events.length === 0) return null;
    const first = this.stmts.byEventId.get(events[0].id) as
      | { stream_id: string; stream_revision: bigint; position: bigint }
      | undefined;
    if (!first) return null;
    const start = first.stream_revision;
    let matches =
      first.stream_id === stream &&
      (typeof expected === 'bigint' ? start === expected + 1n : expected === 'no_stream' ? start === 0n : true);
    let lastFound = first;
    for (let i = 1; matches && i < events.length; i++) {
      const row = this.stmts.byEventId.get(events[i].id) as typeof first | undefined;
      matches = !!row && row.stream_id === stream && row.stream_revision === start + BigInt(i);
      if (row) lastFound = row;
    }
    if (!matches) {
      const last = (this.stmts.lastRevision.get(stream) as { r: bigint | null }).r;
      throw new WrongExpectedVersion(stream, expected, last ?? 'no_stream');
    }
    return { nextExpectedRevision: lastFound.stream_revision, position: lastFound.position };
  }

  async append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    // Serialized before the write lock is taken.
    const encoded = events.map(encode);
    this.assertOpen();
    if (!this.groupCommit) return this.appendNow(stream, encoded, opts.expectedRevision);
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ stream, events: encoded, expected: opts.expectedRevision, resolve, reject });
      this.flushScheduled ??= setImmediate(this.flush);
    });
  }

  private appendNow(stream: string, events: Encoded[], expected: ExpectedRevision): AppendResult {
    let result: AppendResult;
    try {
      result = this.appendImmediate(stream, events, expected);
    } catch (err) {
      throw mapWriteError(err);
    }
    this.appended.emit('appended', result.position);
    return result;
  }

  /** Writes every append queued in this event-loop turn: one transaction, one fsync. */
  private readonly flush = (): void => {
    this.flushScheduled = null;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (this.closed) {
      for (const p of batch) p.reject(new StoreUnavailable('event store is closed'));
      return;
    }
    if (batch.length === 1) {
      const p = batch[0];
      try {
        p.resolve(this.appendNow(p.stream, p.events, p.expected));
      } catch (err) {
        p.reject(err);
      }
      return;
    }
    const outcomes: Outcome[] = [];
    try {
      this.commitGroup(batch, outcomes);
    } catch (err) {
      const mapped = mapWriteError(err);
      for (const p of batch) p.reject(mapped);
      return;
    }
    let head = -1n;
    batch.forEach((p, i) => {
      const o = outcomes[i];
      if ('ok' in o) {
        if (o.ok.position > head) head = o.ok.position;
        p.resolve(o.ok);
      } else {
        p.reject(o.err);
      }
    });
    if (head >= 0n) this.appended.emit('appended', head);
  };

  async readStream(stream: string, opts: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const max = opts.maxCount ?? Number.MAX_SAFE_INTEGER;
    const rows =
      opts.direction === 'backwards'
        ? (this.stmts.readBwd.all(stream, opts.from ?? BigInt(Number.MAX_SAFE_INTEGER), max) as Row[])
        : (this.stmts.readFwd.all(stream, opts.from ?? 0n, max) as Row[]);
    return rows.map(toRecorded);
  }

  async readAll(opts: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readAllSync(opts.fromPosition ?? 0n, opts.maxCount ?? Number.MAX_SAFE_INTEGER);
  }

  private readAllSync(from: bigint, max: number): RecordedEvent[] {
    return (this.stmts.readAll.all(from, max) as Row[]).map(toRecorded);
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
          const events = store.readAllSync(position + 1n, batch);
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
    if (this.flushScheduled) {
      clearImmediate(this.flushScheduled);
      this.flush();
    }
    this.closed = true;
    this.appended.emit('appended', -1n);
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreUnavailable('event store is closed');
  }
}

function toRecorded(r: Row): RecordedEvent {
  return {
    id: r[1],
    stream: r[2],
    revision: r[3],
    position: r[0],
    type: r[4],
    data: JSON.parse(r[5]),
    metadata: JSON.parse(r[6]),
    created: r[7],
  };
}
