import Database from 'better-sqlite3';
import type { AppendResult, ExpectedRevision } from './port';
import { WrongExpectedVersion } from './port';

/**
 * The write side of the SQLite event store. It runs in a worker thread (sqlite-writer-thread.ts),
 * so a COMMIT's fsync (synchronous=FULL) never blocks the service's event loop, and appends that
 * arrive while one COMMIT runs form the next group. Everything that crosses the thread boundary
 * is plain data: requests in, outcomes out (errors as WireError, rebuilt by the store).
 */

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

/** An event with data and metadata already serialized. */
export interface Encoded {
  id: string;
  type: string;
  data: string;
  metadata: string;
}

export interface WriteRequest {
  seq: number;
  stream: string;
  events: Encoded[];
  expected: ExpectedRevision;
  /** ISO time recorded with the events (the store's clock, read when append was called). */
  created: string;
}

export type WireError =
  | { kind: 'conflict'; stream: string; expected: ExpectedRevision; actual: bigint | 'no_stream' }
  | { kind: 'unavailable'; message: string; code?: string }
  | { kind: 'error'; name: string; message: string; code?: string };

export type WriteOutcome = { seq: number; ok: AppendResult } | { seq: number; err: WireError };

export type WriterMessage = { type: 'append'; batch: WriteRequest[] } | { type: 'close' };

const UNAVAILABLE_CODES = [
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_READONLY',
  'SQLITE_CANTOPEN',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
];

export function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return UNAVAILABLE_CODES.some((c) => code.startsWith(c));
}

export function toWire(err: unknown): WireError {
  if (err instanceof WrongExpectedVersion) return { kind: 'conflict', stream: err.stream, expected: err.expected, actual: err.actual };
  const e = err as { name?: string; message?: string; code?: string };
  const code = typeof e?.code === 'string' ? { code: e.code } : {};
  if (isUnavailable(err)) return { kind: 'unavailable', message: e.message ?? String(err), ...code };
  return { kind: 'error', name: e?.name ?? 'Error', message: e?.message ?? String(err), ...code };
}

/** Opens the file with the store's pragmas (set on every connection: a later one reports NORMAL otherwise). */
export function openDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);
  return db;
}

type Append = (r: WriteRequest) => AppendResult;

export interface BatchWriter {
  write(batch: WriteRequest[]): WriteOutcome[];
  close(): void;
}

/** The writer over its own connection; one that cannot open answers every append with the reason. */
export function openWriter(file: string, groupCommit: boolean): BatchWriter {
  try {
    const w = new SqliteWriter(openDatabase(file));
    return { write: (batch) => w.write(batch, groupCommit), close: () => w.close() };
  } catch (err) {
    const wire = toWire(err);
    const reason: WireError = wire.kind === 'unavailable' ? wire : { kind: 'unavailable', message: (err as Error).message ?? String(err) };
    return { write: (batch) => batch.map((r) => ({ seq: r.seq, err: reason })), close: () => undefined };
  }
}

export class SqliteWriter {
  private readonly stmts;
  private readonly appendImmediate: Append;
  /** The same, nested inside a group transaction: better-sqlite3 wraps it in a SAVEPOINT. */
  private readonly appendNested: Append;
  private readonly commitGroup: (batch: WriteRequest[], out: WriteOutcome[]) => void;

  constructor(private readonly db: Database.Database) {
    this.stmts = {
      lastRevision: db.prepare('SELECT MAX(stream_revision) AS r FROM events WHERE stream_id = ?').safeIntegers(true),
      byEventId: db.prepare('SELECT stream_id, stream_revision, position FROM events WHERE event_id = ?').safeIntegers(true),
      insert: db.prepare(
        'INSERT INTO events (event_id, stream_id, stream_revision, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      head: db.prepare('SELECT COALESCE(MAX(position), 0) AS p FROM events').safeIntegers(true),
    };
    // Built once: db.transaction() allocates wrappers on every call.
    const tx = db.transaction(this.appendTx);
    this.appendImmediate = tx.immediate;
    this.appendNested = tx;
    this.commitGroup = db.transaction((batch: WriteRequest[], out: WriteOutcome[]) => {
      for (const r of batch) {
        try {
          out.push({ seq: r.seq, ok: this.appendNested(r) });
        } catch (err) {
          // This append's savepoint is rolled back; the others go on. A failing disk aborts them all.
          if (!(err instanceof WrongExpectedVersion) && isUnavailable(err)) throw err;
          out.push({ seq: r.seq, err: toWire(err) });
        }
      }
    }).immediate;
  }

  /**
   * Writes a batch. Group commit: one BEGIN IMMEDIATE … COMMIT (one fsync) for the whole batch, each
   * append in its own savepoint, so each still succeeds or fails on its own. Without: one
   * transaction per append. Either way an outcome exists only after its COMMIT returned.
   */
  write(batch: WriteRequest[], groupCommit: boolean): WriteOutcome[] {
    if (!groupCommit || batch.length === 1) {
      return batch.map((r) => {
        try {
          return { seq: r.seq, ok: this.appendImmediate(r) };
        } catch (err) {
          return { seq: r.seq, err: toWire(err) };
        }
      });
    }
    const out: WriteOutcome[] = [];
    try {
      this.commitGroup(batch, out);
    } catch (err) {
      const wire = toWire(err);
      return batch.map((r) => ({ seq: r.seq, err: wire }));
    }
    return out;
  }

  close(): void {
    this.db.close();
  }

  /**
   * Runs inside BEGIN IMMEDIATE. The common case (an exact revision or no_stream that matches) costs
   * one index lookup and the inserts: an id that is already stored is caught by UNIQUE(event_id) and
   * only then looked up. `any` / `stream_exists` look the ids up first (best-effort idempotency).
   */
  private readonly appendTx = ({ stream, events, expected, created }: WriteRequest): AppendResult => {
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
    if (events.length === 0) {
      return { nextExpectedRevision: last ?? -1n, position: (this.stmts.head.get() as { p: bigint }).p };
    }
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
    const first = this.stmts.byEventId.get(events[0].id) as { stream_id: string; stream_revision: bigint; position: bigint } | undefined;
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
}
