import {
  ANY,
  BACKWARDS,
  CancelledError,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  FORWARDS,
  jsonEvent,
  NO_STREAM,
  NotLeaderError,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
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
  assertJsonSafe,
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
 * System events (`$`-prefixed event types, or events in `$`-prefixed streams) are never returned:
 * the 6.x client has no server-side filter on reads, so they are skipped here.
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
  /** First resubscribe delay after a dropped subscription; doubles up to `maxResubscribeDelayMs`. Default 100. */
  resubscribeDelayMs?: number;
  /** Default 5 000. */
  maxResubscribeDelayMs?: number;
  /** Told about every subscription drop before the resubscribe (for logs and metrics). */
  onSubscriptionDropped?: (err: unknown, info: { attempt: number; delayMs: number; after: bigint | null }) => void;
}

const PAGE = 1000;
const PING_STREAM = 'tollgate-ping';

function toClientRevision(r: ExpectedRevision): AppendExpectedRevision {
  if (typeof r === 'bigint') return r;
  switch (r) {
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    case 'any':
      return ANY;
  }
  throw new TypeError(`unknown expected revision ${String(r)}`);
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

/** Errors that mean "the store could not be reached or did not answer in time". */
export function isUnavailableError(err: unknown): boolean {
  if (
    err instanceof UnavailableError ||
    err instanceof DeadlineExceededError ||
    err instanceof NotLeaderError ||
    err instanceof CancelledError
  ) {
    return true;
  }
  // appendToStream rejects with the raw gRPC ServiceError when no connection can be made.
  const code = (err as { code?: unknown } | null)?.code;
  return code === 14 /* UNAVAILABLE */ || code === 4 /* DEADLINE_EXCEEDED */ || code === 1 /* CANCELLED */;
}

function unavailable(what: string, err: unknown): StoreUnavailable {
  return new StoreUnavailable(`event store ${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

function mapReadError(what: string, err: unknown): unknown {
  return isUnavailableError(err) ? unavailable(what, err) : err;
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

type Cancellable = AsyncIterable<unknown> & { cancel?: () => Promise<void>; destroy?: (err?: Error) => unknown };

async function cancelQuietly(stream: Cancellable): Promise<void> {
  try {
    await stream.cancel?.();
  } catch {
    /* already finished */
  }
  stream.destroy?.();
}

export class EsdbEventStore implements EventStore {
  readonly kind = 'esdb' as const;
  private readonly client: EsdbClient;
  private readonly ownsClient: boolean;
  private readonly operationTimeoutMs: number;
  private readonly resubscribeDelayMs: number;
  private readonly maxResubscribeDelayMs: number;
  private readonly onSubscriptionDropped?: EsdbOptions['onSubscriptionDropped'];
  private readonly subscriptions = new Set<Subscription>();
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
    this.resubscribeDelayMs = opts.resubscribeDelayMs ?? 100;
    this.maxResubscribeDelayMs = opts.maxResubscribeDelayMs ?? 5_000;
    this.onSubscriptionDropped = opts.onSubscriptionDropped;
  }

  async append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    for (const e of events) {
      assertJsonSafe(e.data, `${e.type}.data`);
      assertJsonSafe(e.metadata ?? {}, `${e.type}.metadata`);
    }
    this.assertOpen();
    const expected = opts.expectedRevision;
    const proposed = events.map((e) =>
      jsonEvent({ id: e.id, type: e.type, data: e.data as JSONType, metadata: (e.metadata ?? {}) as JSONType }),
    );
    let result;
    try {
      result = await withTimeout(
        this.client.appendToStream(stream, proposed, { expectedRevision: toClientRevision(expected) }),
        this.operationTimeoutMs,
      );
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        throw new WrongExpectedVersion(stream, expected, err.actualVersion);
      }
      if (err instanceof Timeout) throw unavailable('write', err);
      if (isUnavailableError(err)) throw unavailable('write', err);
      throw err;
    }
    const next = result.nextExpectedRevision;
    // For one event the reported position is that event's. For several (or an idempotent retry that
    // reports none) read the last one back, so the result names the last event written or found.
    let position = events.length === 1 ? result.position?.commit : undefined;
    if (position === undefined && events.length > 0) {
      position = (await this.positionOfRevision(stream, next)) ?? result.position?.commit;
    }
    return { nextExpectedRevision: next, position: position ?? -1n };
  }

  private async positionOfRevision(stream: string, revision: bigint): Promise<bigint | undefined> {
    try {
      const read = this.client.readStream(stream, { fromRevision: revision, maxCount: 1 });
      for await (const r of read) return positionOf(r)?.commit;
    } catch {
      /* best effort: the write itself succeeded */
    }
    return undefined;
  }

  async readStream(stream: string, opts: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    if (opts.maxCount !== undefined && opts.maxCount <= 0) return [];
    const direction = opts.direction === 'backwards' ? BACKWARDS : FORWARDS;
    const fromRevision: ReadRevision = opts.from ?? (direction === BACKWARDS ? END : START);
    const out: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(stream, {
        fromRevision,
        direction,
        maxCount: opts.maxCount ?? Number.MAX_SAFE_INTEGER,
      });
      for await (const r of read) {
        if (r.event) out.push(toRecorded(r.event, positionOf(r)));
      }
    } catch (err) {
      // The client reports a missing stream while iterating, not when the read is started.
      if (err instanceof StreamNotFoundError) return [];
      throw mapReadError('read', err);
    }
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
        for await (const r of read) {
          n++;
          const pos = positionOf(r);
          if (!pos) continue;
          if (skip && samePosition(pos, skip)) continue;
          last = pos;
          if (!r.event || isSystem(r.event)) continue;
          out.push(toRecorded(r.event, pos));
          if (out.length >= max) {
            await cancelQuietly(read);
            return out;
          }
        }
        if (n < pageSize || !last) return out;
        cursor = last;
        skip = last;
      }
    } catch (err) {
      throw mapReadError('read', err);
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
        for await (const r of read) {
          n++;
          const pos = positionOf(r);
          if (!pos || (skip && samePosition(pos, skip))) continue;
          last = pos;
          if (r.event && !isSystem(r.event)) {
            await cancelQuietly(read);
            return pos.commit;
          }
        }
        if (n < pageSize || !last) return 0n;
        cursor = last;
        skip = last;
      }
    } catch (err) {
      throw mapReadError('read', err);
    }
  }

  async ping(): Promise<void> {
    this.assertOpen();
    const read = this.client.readStream(PING_STREAM, { maxCount: 1 });
    const drain = (async () => {
      for await (const _ of read) break;
    })();
    try {
      await withTimeout(drain, Math.min(this.operationTimeoutMs, 5_000), () => void cancelQuietly(read));
    } catch (err) {
      if (err instanceof StreamNotFoundError) return;
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
      let attempt = 0;
      try {
        while (!stopped) {
          const sub = store.client.subscribeToAll({ fromPosition: last ?? START });
          current = sub;
          sub.on('confirmation', () => {
            attempt = 0;
          });
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
            failure = isUnavailableError(err) ? unavailable('subscription', err) : err;
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
