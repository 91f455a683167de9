import { EventEmitter } from 'node:events';
import { recordedFromJson } from './decode';
import { Client, Pool, QueryConfig, types as pgTypes } from 'pg';
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
} from './port';
import { MAX_EVENTS_PER_TX, MIGRATE_LOCK_KEY, MIGRATIONS, NOTIFY_CHANNEL } from './postgres-schema';

/**
 * The event store on PostgreSQL, for several processes on several machines writing one store.
 * Appends are one call of `tollgate_append_together` per group-commit batch (one round trip, no lock;
 * several batches in flight; the batch's appends decided together, see ./postgres-schema). Every read of the global order stops below the safe point
 * (`tollgate_safe_position()`: nothing below it can still be committed, see ./postgres-schema).
 * Subscriptions read `position > checkpoint` and wake on LISTEN/NOTIFY (one dedicated connection per
 * store), polling as a fallback while that connection is down, and quickly while committed events
 * wait above the safe point.
 */

export interface PostgresOptions {
  /** postgres://user:password@host:5432/database */
  connectionString: string;
  /** Pooled connections for appends and reads. */
  poolSize?: number;
  /** How often an idle subscription polls (LISTEN/NOTIFY normally wakes it at once). */
  pollIntervalMs?: number;
  /** How long a connection attempt may take before the store counts as unavailable. */
  connectTimeoutMs?: number;
  /** Server-side limit on one statement (reads and appends alike). */
  statementTimeoutMs?: number;
  /** Clock for `created`; injectable for tests. */
  now?: () => Date;
  /**
   * Group commit (default on): appends queued while the previous batch is being written go out
   * together as one call, one transaction and one WAL flush; each still succeeds or fails on its own.
   * Off: one transaction per append.
   */
  groupCommit?: boolean;
  /**
   * Group-commit batches one store may have in flight at once (default 4; each holds a pooled
   * connection). Batches never share a stream, so each stream's appends still go one after another.
   */
  maxBatchesInFlight?: number;
  /**
   * How long readAll may wait for the safe point to pass events already committed when it was called
   * (a transaction in this database that holds an older xid keeps it back). Past it,
   * readAll returns what is safe; subscriptions never wait, they poll again.
   */
  safePointWaitMs?: number;
  /**
   * How long an append whose outcome is unknown (the connection dropped after the statement was sent)
   * may spend finding out, by reading its event ids back, before it fails as StoreUnavailable anyway.
   */
  readBackTimeoutMs?: number;
}

/** One append waiting in the group-commit queue: its events as JSON text. */
export interface PendingAppend {
  stream: string;
  expected: ExpectedRevision;
  ids: string[];
  types: string[];
  data: string[];
  meta: string[];
  resolve: (r: AppendResult) => void;
  reject: (err: unknown) => void;
}

const COLUMNS = `position, event_id, stream_id, stream_revision, type, data, metadata,
  to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created`;
type Row = [
  position: string,
  eventId: string,
  streamId: string,
  revision: string,
  type: string,
  data: unknown,
  metadata: unknown,
  created: string,
];
/** The same columns with the JSON as text, parsed by us (./decode.ts): only when read, for types a reader skips. */
const COLUMNS_JSON_TEXT = `position, event_id, stream_id, stream_revision, type, data::text, metadata::text,
  to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created`;
type TextRow = [
  position: string,
  eventId: string,
  streamId: string,
  revision: string,
  type: string,
  data: string,
  metadata: string,
  created: string,
];

/** int8 stays a string (parsed to bigint by us); json is parsed; nothing else is touched. */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20) return (v: string) => v;
    return pgTypes.getTypeParser(oid, format as 'text');
  },
};

/** Node network errors and the SQLSTATE classes that mean "the store is not there right now". */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const UNAVAILABLE_SQLSTATE = /^(08|28|3D|53|57|58)/;

function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  const code = e?.code ?? '';
  if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)) return true;
  // pg's own client-side failures carry no code.
  return /Connection terminated|timeout exceeded|Client has encountered a connection error|Connection closed|not queryable/i.test(
    e?.message ?? '',
  );
}

function mapError(err: unknown, what: string): unknown {
  if (err instanceof WrongExpectedVersion || err instanceof StoreUnavailable) return err;
  if (isUnavailable(err)) return new StoreUnavailable(`event store ${what} failed: ${(err as Error).message}`, { cause: err });
  return err;
}

function expectedParam(e: ExpectedRevision): string {
  return typeof e === 'bigint' ? e.toString() : e;
}

export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres' as const;
  private readonly pool: Pool;
  private readonly appended = new EventEmitter();
  private readonly pollIntervalMs: number;
  private readonly now: () => Date;
  private readonly opts: PostgresOptions;
  private closed = false;
  /** close() has begun: new calls are refused, queued appends are still written. */
  private closing = false;
  private ready: Promise<void> | null = null;
  private listener: Client | null = null;
  private listenerRetry: NodeJS.Timeout | null = null;
  private listenerBackoff = 100;
  private subscribers = 0;
  private readonly groupCommit: boolean;
  private readonly maxBatchesInFlight: number;
  private readonly safePointWaitMs: number;
  private readonly readBackTimeoutMs: number;
  private queue: PendingAppend[] = [];
  /** Batches being written, and the streams they hold (a stream is in at most one batch at a time). */
  private inFlight = 0;
  private readonly streamsInFlight = new Set<string>();
  private flushScheduled: NodeJS.Immediate | null = null;
  private idle: Promise<void> = Promise.resolve();
  private settleIdle: (() => void) | null = null;

  constructor(opts: PostgresOptions) {
    this.opts = opts;
    this.pollIntervalMs = opts.pollIntervalMs ?? 250;
    this.now = opts.now ?? (() => new Date());
    this.groupCommit = opts.groupCommit ?? true;
    this.maxBatchesInFlight = Math.max(1, opts.maxBatchesInFlight ?? 4);
    this.safePointWaitMs = opts.safePointWaitMs ?? 5_000;
    this.readBackTimeoutMs = opts.readBackTimeoutMs ?? 5_000;
    this.appended.setMaxListeners(0);
    this.pool = new Pool({
      connectionString: opts.connectionString,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5_000,
      statement_timeout: opts.statementTimeoutMs ?? 30_000,
      application_name: 'tollgate',
      types: TYPES,
    });
    // An idle pooled connection that dies (server restart) must not crash the process.
    this.pool.on('error', () => undefined);
  }

  /** Creates or migrates the schema on first use; a failure is retried by the next call. */
  private init(): Promise<void> {
    if (this.closed) return Promise.reject(new StoreUnavailable('event store is closed'));
    this.ready ??= this.migrate().catch((err) => {
      this.ready = null;
      throw mapError(err, 'start');
    });
    return this.ready;
  }

  private async migrate(): Promise<void> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      await c.query(`SELECT pg_advisory_xact_lock(${MIGRATE_LOCK_KEY})`);
      await c.query('CREATE TABLE IF NOT EXISTS tollgate_schema (version int NOT NULL)');
      const { rows } = await c.query<{ version: number }>('SELECT version FROM tollgate_schema');
      const from = rows[0]?.version ?? 0;
      if (from > MIGRATIONS.length) {
        throw new Error(`the database's event schema is version ${from}, newer than this tollgate knows (${MIGRATIONS.length})`);
      }
      for (let v = from; v < MIGRATIONS.length; v++) await c.query(MIGRATIONS[v]);
      if (rows.length === 0) await c.query('INSERT INTO tollgate_schema (version) VALUES ($1)', [MIGRATIONS.length]);
      else await c.query('UPDATE tollgate_schema SET version = $1', [MIGRATIONS.length]);
      await c.query('COMMIT');
      c.release();
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      c.release(true);
      throw err;
    }
  }

  private async query<R extends unknown[]>(what: string, text: string, values: unknown[]): Promise<R[]> {
    await this.init();
    try {
      const res = await this.pool.query<R>({ text, values, rowMode: 'array' });
      return res.rows;
    } catch (err) {
      throw mapError(err, what);
    }
  }

  async append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    const p: Omit<PendingAppend, 'resolve' | 'reject'> = {
      stream,
      expected: opts.expectedRevision,
      ids: [],
      types: [],
      data: [],
      meta: [],
    };
    assertAppendable(stream, events);
    if (events.length > MAX_EVENTS_PER_TX) {
      throw new RangeError(
        `append to ${stream}: at most ${MAX_EVENTS_PER_TX} events per append on PostgreSQL (positions number the events of one transaction in 16 bits)`,
      );
    }
    for (const e of events) {
      p.ids.push(e.id);
      p.types.push(e.type);
      p.data.push(JSON.stringify(e.data));
      p.meta.push(JSON.stringify(e.metadata ?? {}));
    }
    this.assertOpen();
    return new Promise<AppendResult>((resolve, reject) => {
      const pending = { ...p, resolve, reject };
      if (!this.groupCommit) {
        void this.init().then(
          () => this.write([pending]),
          (err) => reject(err),
        );
        return;
      }
      this.queue.push(pending);
      this.scheduleFlush();
    });
  }

  /**
   * Up to maxBatchesInFlight batches at a time: what queues up meanwhile becomes the next batch. A
   * batch takes each stream at most once and no stream another batch in flight holds (every append is
   * decided against what is committed, so a stream's appends must commit one after another), each
   * event id at most once (tollgate_append_together decides them all before inserting any), and at
   * most MAX_EVENTS_PER_TX events; the rest waits, in order.
   */
  private scheduleFlush(): void {
    if (this.flushScheduled || this.inFlight >= this.maxBatchesInFlight || this.queue.length === 0) return;
    this.flushScheduled = setImmediate(() => {
      this.flushScheduled = null;
      const batch = this.takeBatch();
      if (batch.length === 0) return;
      if (this.inFlight++ === 0) this.idle = new Promise((r) => (this.settleIdle = r));
      for (const p of batch) this.streamsInFlight.add(p.stream);
      void this.flush(batch).finally(() => {
        for (const p of batch) this.streamsInFlight.delete(p.stream);
        if (--this.inFlight === 0) this.settleIdle?.();
        this.scheduleFlush();
      });
      this.scheduleFlush();
    });
  }

  private takeBatch(): PendingAppend[] {
    const batch: PendingAppend[] = [];
    const later: PendingAppend[] = [];
    const blocked = new Set(this.streamsInFlight);
    const ids = new Set<string>();
    let events = 0;
    for (const p of this.queue) {
      const fits = !blocked.has(p.stream) && events + p.ids.length <= MAX_EVENTS_PER_TX && !p.ids.some((id) => ids.has(id));
      // A stream passed over stays blocked for the rest of this turn: its appends keep their order.
      blocked.add(p.stream);
      if (!fits) {
        later.push(p);
        continue;
      }
      batch.push(p);
      events += p.ids.length;
      for (const id of p.ids) ids.add(id);
    }
    this.queue = later;
    return batch;
  }

  private async flush(batch: PendingAppend[]): Promise<void> {
    try {
      await this.init();
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    await this.write(batch);
  }

  /**
   * Writes one batch in one transaction and settles each of its appends. A unique violation (23505)
   * means another transaction committed one of these revisions or ids after the batch was decided:
   * the batch rolled back whole, and is sent again as a new transaction (with a new, larger xid, so
   * its positions stay after the events it raced with), with a short random pause; from the third
   * try each append goes alone, so one append that keeps losing cannot hold the others back.
   */
  private async write(batch: PendingAppend[], attempt = 0): Promise<void> {
    let rows: BatchRow[];
    try {
      rows = await this.appendCall(this.appendStatement(batch, this.now()), batch);
    } catch (err) {
      if ((err as { code?: string }).code === '23505' && attempt < MAX_RACE_RETRIES) {
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));
        if (attempt >= 1 && batch.length > 1) {
          await Promise.all(batch.map((p) => this.write([p], attempt + 1)));
          return;
        }
        return this.write(batch, attempt + 1);
      }
      if (!(err instanceof OutcomeKnown)) for (const p of batch) p.reject(mapError(err, 'append'));
      return;
    }
    let wrote = false;
    for (const [ord, ok, revision, pos] of rows) {
      const p = batch[ord - 1];
      try {
        p.resolve(toResult(p.stream, p.expected, [ok, revision, pos]));
        wrote ||= ok;
      } catch (err) {
        p.reject(err);
      }
    }
    if (wrote) this.appended.emit('appended');
  }

  /**
   * One append statement on a connection of its own, so that when the connection drops after the
   * statement went out (its COMMIT may or may not have happened) the outcome is found out before
   * anyone is answered: the server process that ran it is ended, then the event ids are read back.
   * Settles the batch itself then and throws OutcomeKnown.
   */
  private async appendCall(statement: QueryConfig, batch: PendingAppend[]): Promise<BatchRow[]> {
    const client = await this.pool.connect().catch((err) => {
      throw mapError(err, 'append');
    });
    // A cut connection also emits 'error' on the client; the failed query below is where it is handled.
    const ignore = () => undefined;
    client.on('error', ignore);
    try {
      const res = await client.query<BatchRow>({ ...statement, rowMode: 'array' });
      client.off('error', ignore);
      client.release();
      return res.rows;
    } catch (err) {
      const unknown = isUnavailable(err);
      // A client going back to the pool (a conflict, 23505) must not keep this listener: retries add one each.
      if (!unknown) client.off('error', ignore);
      client.release(unknown ? true : undefined);
      if (!unknown) throw err;
      const pid = (client as unknown as { processID?: number }).processID ?? null;
      await this.readBack(batch, pid, err);
      throw new OutcomeKnown();
    }
  }

  /**
   * The outcome of a batch whose connection dropped mid-statement. Ends the server process that ran
   * it (so the transaction is over: committed or not, never later), then reads the ids back: an append
   * whose events are all there landed (its caller gets the result); the others did not (StoreUnavailable,
   * nothing written). If the store cannot be asked within readBackTimeoutMs, StoreUnavailable for all.
   */
  private async readBack(batch: PendingAppend[], pid: number | null, cause: unknown): Promise<void> {
    const deadline = Date.now() + this.readBackTimeoutMs;
    const ids = batch.flatMap((p) => p.ids);
    let backoff = 25;
    for (;;) {
      try {
        if (pid !== null) {
          await this.pool.query('SELECT pg_terminate_backend($1)', [pid]).catch(() => undefined);
          // pg_terminate_backend only signals: wait until that process is gone.
          while ((await this.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount) {
            if (Date.now() > deadline) throw new Error(`server process ${pid} did not end`);
            await new Promise((r) => setTimeout(r, 5));
          }
        }
        const { rows } = await this.pool.query<ReadBackRow>({
          text: 'SELECT event_id, stream_id, stream_revision, position FROM tollgate_events WHERE event_id = ANY ($1)',
          values: [ids],
          rowMode: 'array',
        });
        const found = new Map(rows.map((r) => [r[0], r]));
        let wrote = false;
        for (const p of batch) {
          const mine = p.ids.map((id) => found.get(id)).filter((r): r is ReadBackRow => r !== undefined && r[1] === p.stream);
          if (mine.length === p.ids.length) {
            wrote = true;
            const last = mine.reduce((a, b) => (BigInt(b[2]) > BigInt(a[2]) ? b : a));
            p.resolve({ nextExpectedRevision: BigInt(last[2]), position: BigInt(last[3]) });
          } else {
            p.reject(new StoreUnavailable(`event store append failed and was not written: ${(cause as Error).message}`, { cause }));
          }
        }
        if (wrote) this.appended.emit('appended');
        return;
      } catch {
        if (Date.now() + backoff > deadline || this.closed) {
          for (const p of batch) {
            p.reject(
              new StoreUnavailable(`event store append failed; whether it was written is unknown: ${(cause as Error).message}`, { cause }),
            );
          }
          return;
        }
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 500);
      }
    }
  }

  async readStream(stream: string, opts: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const limit = opts.maxCount ?? null;
    const rows =
      opts.direction === 'backwards'
        ? await this.query<Row>(
            'read',
            `SELECT ${COLUMNS} FROM tollgate_events WHERE stream_id = $1 AND stream_revision <= $2 ORDER BY stream_revision DESC LIMIT $3`,
            [stream, (opts.from ?? BigInt(Number.MAX_SAFE_INTEGER)).toString(), limit],
          )
        : await this.query<Row>(
            'read',
            `SELECT ${COLUMNS} FROM tollgate_events WHERE stream_id = $1 AND stream_revision >= $2 ORDER BY stream_revision ASC LIMIT $3`,
            [stream, (opts.from ?? 0n).toString(), limit],
          );
    return rows.map(toRecorded);
  }

  /**
   * Everything committed before the call (up to maxCount): when events already committed then wait
   * above the safe point, it polls until the safe point passes the newest of them (not later ones:
   * under constant writes something is always above it), for at most safePointWaitMs; then it
   * returns what is safe (always a prefix of the final order).
   */
  async readAll(opts: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const from = opts.fromPosition ?? 0n;
    const max = opts.maxCount ?? null;
    const deadline = Date.now() + this.safePointWaitMs;
    let target: bigint | null = null;
    for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
      const { events, waiting } = await this.readFrom(from, max, opts.decode);
      target ??= waiting?.head ?? -1n;
      if (waiting === null || waiting.safe > target || Date.now() + pause > deadline) return events;
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /**
   * Events at or after `from` below the safe point, in position order. `waiting` (only when the read
   * came back short): the newest committed position and the safe point, when that position is at or
   * above both `from` and the safe point, i.e. committed events wait for a transaction with an older
   * xid, still running, to end. One statement, so the events, the safe point and the head all come
   * from one snapshot (a head read later could pass a safe point the events were not read up to).
   * The safe point is computed once (a MATERIALIZED CTE), so the read is an index range scan (called
   * per row it was a sequential scan) and the head one index probe (max).
   */
  private async readFrom(
    from: bigint,
    max: number | null,
    decode?: ReadonlySet<string>,
  ): Promise<{ events: RecordedEvent[]; waiting: { head: bigint; safe: bigint } | null }> {
    // With `decode`, data and metadata come back as JSON text, parsed only for the types the reader
    // looks into (./decode.ts); without it, pg parses every row's JSON.
    const rows = await this.query<[string, string, ...Row] | [string, string, ...TextRow]>(
      'read',
      `WITH b AS MATERIALIZED (SELECT tollgate_safe_position() AS safe, (SELECT coalesce(max(position), 0) FROM tollgate_events) AS head)
       SELECT b.safe, b.head, e.* FROM b LEFT JOIN LATERAL (
         SELECT ${decode ? COLUMNS_JSON_TEXT : COLUMNS} FROM tollgate_events WHERE position >= $1 AND position < b.safe ORDER BY position ASC LIMIT $2
       ) e ON true`,
      [from.toString(), max],
    );
    const safe = BigInt(rows[0][0]);
    const head = BigInt(rows[0][1]);
    const events: RecordedEvent[] = [];
    for (const r of rows) {
      if (r[2] === null) continue;
      if (!decode) {
        events.push(toRecorded(r.slice(2) as Row));
        continue;
      }
      const t = r as [string, string, ...TextRow];
      events.push(recordedFromJson(BigInt(t[2]), t[3], t[4], BigInt(t[5]), t[6], t[7], t[8], t[9], decode));
    }
    const short = max === null || events.length < max;
    return { events, waiting: short && head >= safe && head >= from ? { head, safe } : null };
  }

  async headPosition(): Promise<bigint> {
    this.assertOpen();
    const [[p]] = await this.query<[string]>('read', 'SELECT coalesce(max(position), 0) FROM tollgate_events', []);
    return BigInt(p);
  }

  async ping(): Promise<void> {
    this.assertOpen();
    await this.query('ping', 'SELECT 1', []);
  }

  subscribeToAll(opts: SubscribeOptions = {}): Subscription {
    let position = opts.after ?? 0n;
    let stopped = false;
    let wake: (() => void) | null = null;
    const onAppend = () => wake?.();
    this.appended.on('appended', onAppend);
    this.subscribers++;
    this.ensureListener();
    const store = this;
    const batch = 1000;
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }).then(() => {
        wake = null;
      });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      store.appended.off('appended', onAppend);
      store.subscribers--;
      if (store.subscribers === 0) store.stopListener();
    };

    async function* iterate(): AsyncGenerator<RecordedEvent> {
      let backoff = 100;
      let fast = 1;
      try {
        while (!stopped && !store.closed) {
          let events: RecordedEvent[];
          let behind: boolean;
          try {
            let waiting: unknown;
            ({ events, waiting } = await store.readFrom(position + 1n, batch, opts.decode));
            behind = waiting !== null;
            backoff = 100;
          } catch (err) {
            // A dropped connection: resume from the last position once the store answers again.
            if (store.closed) return;
            if (!(err instanceof StoreUnavailable)) throw err;
            await pause(backoff);
            backoff = Math.min(backoff * 2, 5_000);
            continue;
          }
          for (const e of events) {
            if (stopped) return;
            position = e.position;
            yield e;
          }
          if (events.length < batch) {
            // Committed events above the safe point: look again soon (the transaction holding it back
            // may not be an append, so no notification says when it ends).
            if (behind) {
              await pause(Math.min(fast, store.pollIntervalMs));
              fast = Math.min(fast * 2, 50);
            } else {
              fast = 1;
              await pause(store.pollIntervalMs);
            }
          }
        }
      } finally {
        release();
      }
    }
    const it = iterate();
    return {
      [Symbol.asyncIterator]: () => it,
      close: async () => {
        stopped = true;
        release();
        wake?.();
      },
    };
  }

  /** One dedicated connection LISTENs for appends made by other processes; reconnects with backoff. */
  private ensureListener(): void {
    if (this.listener || this.listenerRetry || this.closed || this.subscribers === 0) return;
    const client = new Client({
      connectionString: this.opts.connectionString,
      connectionTimeoutMillis: this.opts.connectTimeoutMs ?? 5_000,
    });
    this.listener = client;
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = null;
      client.removeAllListeners('notification');
      client.end().catch(() => undefined);
      if (this.closed || this.subscribers === 0) return;
      // Notifications sent meanwhile are lost: wake everyone once to poll, then retry.
      this.appended.emit('appended');
      this.listenerRetry = setTimeout(() => {
        this.listenerRetry = null;
        this.ensureListener();
      }, this.listenerBackoff);
      this.listenerBackoff = Math.min(this.listenerBackoff * 2, 5_000);
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => this.appended.emit('appended'));
    client
      .connect()
      .then(() => client.query(`LISTEN ${NOTIFY_CHANNEL}`))
      .then(() => {
        this.listenerBackoff = 100;
        // Anything appended while it was connecting: look once.
        this.appended.emit('appended');
      })
      .catch(lost);
  }

  private stopListener(): void {
    if (this.listenerRetry) clearTimeout(this.listenerRetry);
    this.listenerRetry = null;
    const l = this.listener;
    this.listener = null;
    if (l) {
      l.removeAllListeners('notification');
      l.end().catch(() => undefined);
    }
  }

  /** True while the LISTEN connection is up (tests, health). */
  get listening(): boolean {
    return this.listener !== null && this.listenerRetry === null;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    // Appends already accepted are written before the pool closes.
    while (this.inFlight > 0 || this.flushScheduled || this.queue.length > 0)
      await this.idle.then(() => new Promise((r) => setImmediate(r)));
    this.closed = true;
    this.stopListener();
    this.appended.emit('appended');
    await this.pool.end().catch(() => undefined);
  }

  /**
   * The statement that writes one batch: a call of tollgate_append_together, answering one row
   * (ord, ok, revision, pos) per append. Protected so that a bench can measure an older append
   * function against it in one run (test/bench/store-postgres.bench.ts).
   */
  protected appendStatement(batch: PendingAppend[], created: Date): QueryConfig {
    const c = batchColumns(batch);
    return {
      // Named: parsed once per connection.
      name: 'tollgate_append_together',
      text: 'SELECT ord, ok, revision, pos FROM tollgate_append_together($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      // Data and metadata as one JSON array each, joined from each event's JSON text (no escaping
      // into an array literal, no second stringify).
      values: [c.streams, c.expected, c.offsets, c.counts, c.ids, c.types, `[${c.data.join(',')}]`, `[${c.meta.join(',')}]`, created],
    };
  }

  private assertOpen(): void {
    if (this.closing) throw new StoreUnavailable('event store is closed');
  }
}

type BatchRow = [ord: number, ok: boolean, revision: string | null, pos: string | null];
type ReadBackRow = [eventId: string, streamId: string, revision: string, position: string];

/** Thrown by appendCall once the read-back has settled every append of the batch itself. */
class OutcomeKnown extends Error {}

/** Tries of a batch that lost a race (23505) before its appends fail with that error. */
const MAX_RACE_RETRIES = 20;

/** A batch's appends as the columns an append function takes: events flattened, each append by offset and count. */
export function batchColumns(batch: PendingAppend[]) {
  const streams: string[] = [];
  const expected: string[] = [];
  const offsets: number[] = [];
  const counts: number[] = [];
  const ids: string[] = [];
  const types: string[] = [];
  const data: string[] = [];
  const meta: string[] = [];
  for (const p of batch) {
    streams.push(p.stream);
    expected.push(expectedParam(p.expected));
    offsets.push(ids.length);
    counts.push(p.ids.length);
    ids.push(...p.ids);
    types.push(...p.types);
    data.push(...p.data);
    meta.push(...p.meta);
  }
  return { streams, expected, offsets, counts, ids, types, data, meta };
}

function toResult(stream: string, expected: ExpectedRevision, [ok, revision, pos]: [boolean, string | null, string | null]): AppendResult {
  if (!ok) throw new WrongExpectedVersion(stream, expected, revision === null ? 'no_stream' : BigInt(revision));
  return { nextExpectedRevision: BigInt(revision!), position: BigInt(pos!) };
}

function toRecorded(r: Row): RecordedEvent {
  return {
    id: r[1],
    stream: r[2],
    revision: BigInt(r[3]),
    position: BigInt(r[0]),
    type: r[4],
    data: r[5],
    metadata: r[6] as RecordedEvent['metadata'],
    created: r[7],
  };
}
