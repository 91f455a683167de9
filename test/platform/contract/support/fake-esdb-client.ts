/**
 * An in-memory stand-in for the parts of @eventstore/db-client 6.2.1 that EsdbEventStore uses
 * (appendToStream, readStream, readAll, subscribeToAll, dispose). The wire path is covered by the
 * gRPC test server (test/support/esdb-grpc-server); this fake is for what is easier to provoke in
 * process: exact call options, injected client errors (of this client's classes or another's), reads
 * that never answer, drops at chosen moments.
 *
 * Its storage and write rules are the gRPC test server's (test/support/esdb-grpc-server/log), so both
 * follow the EventStoreDB server's behaviour, as read in its source (kurrent-io/KurrentDB):
 * - positions are byte offsets; every event written through gRPC has commit == prepare;
 * - $all reads are inclusive of fromPosition forwards, and return records strictly before it backwards;
 * - subscriptions start strictly after fromPosition;
 * - readStream fails with StreamNotFoundError while iterating;
 * - a position that is not the start of a record is refused by reads and subscriptions of $all
 *   (InvalidArgument, which the client reports as UnknownError); a subscription is confirmed first;
 * - idempotency (IndexWriter.CheckCommit): an exact revision below the stream's current one (or
 *   no_stream on an existing stream) checks the ids at the revisions after it and answers with the
 *   ORIGINAL result (last revision and last event's position); an exact revision AT the current one
 *   writes without any id check (duplicates); `any` / `stream_exists` consult a best-effort id
 *   cache (`forgetIds()` empties it, as an eviction or restart does);
 * - a multi-event append reports the last event's position (commit == prepare);
 * - with no server, appendToStream rejects with a raw gRPC error (code 14); reads and subscriptions
 *   fail with UnavailableError.
 * Fault injection: `failNext` (any error, once, for one operation), `hangReads` (a server that does
 * not answer reads), `foreignErrors` (errors shaped like another client's: same `type`, other class).
 * Every call is logged in `calls` with its options (requiresLeader…).
 * It does not model: links, deleted streams, ACLs, explicit transactions.
 */
import { PassThrough } from 'node:stream';
import {
  BACKWARDS,
  END,
  START,
  StreamNotFoundError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import type { AppendExpectedRevision, Position, ReadPosition, ReadRevision } from '@eventstore/db-client';
import { EsdbLog } from '../../../support/esdb-grpc-server/log';
import type { LogRecord } from '../../../support/esdb-grpc-server/log';

interface ProposedEvent {
  id: string;
  type: string;
  contentType: string;
  data: unknown;
  metadata?: unknown;
}

type FakeSubscription = PassThrough & { unsubscribe(): Promise<void>; id?: string };
type Op = 'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll';
export interface FakeCall {
  op: Op;
  stream?: string;
  options: Record<string, unknown>;
}

function invalidPosition(): Error {
  return new UnknownError(undefined, '3 INVALID_ARGUMENT: Trying to read from an invalid position.');
}

/** The same error as another client (e.g. @kurrent/kurrentdb-client) would throw: same `type`, not our class. */
function foreign(err: Error): Error {
  const copy = Object.assign(new Error(err.message), { ...err });
  return copy;
}

function rawUnavailable(): Error {
  const err = new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED (fake)');
  return Object.assign(err, { code: 14, details: 'No connection established' });
}

export class FakeEsdbClient {
  private readonly log = new EsdbLog();
  private readonly live = new Set<FakeSubscription>();
  /** When true the "server" is unreachable. */
  unavailable = false;
  /** Every fromPosition a subscription was opened with, in order. */
  readonly subscribeCalls: ReadPosition[] = [];
  /** Every call, in order, with its options. */
  readonly calls: FakeCall[] = [];
  /** Errors to throw once from the next call of an operation, in order. */
  private readonly failures = new Map<Op, Error[]>();
  /** When true, reads are accepted but never answered (until cancelled). */
  hangReads = false;
  /** When true, every error the fake throws is a plain Error carrying the client's `type`. */
  foreignErrors = false;
  /** When set, every subscription is confirmed and then fails with this error. */
  failAfterConfirmation: Error | null = null;

  constructor() {
    this.log.systemEvery = 3;
    this.log.onAppend((r) => {
      for (const sub of this.live) sub.write(this.resolvedAll(r));
    });
  }

  /** The next call of `op` throws `err` (queued: several calls, several errors). */
  failNext(op: Op, err: Error): void {
    const q = this.failures.get(op) ?? [];
    q.push(err);
    this.failures.set(op, q);
  }

  /** The id cache is lost (eviction, restart): `any` re-sends are no longer recognised. */
  forgetIds(): void {
    this.log.forgetIds();
  }

  private fault(op: Op): Error | undefined {
    const q = this.failures.get(op);
    const err = q?.shift();
    return err && this.shape(err);
  }

  private shape(err: Error): Error {
    return this.foreignErrors ? foreign(err) : err;
  }

  /** Index of the record at `p` (the log's length for its end), -1 inside a record. */
  private indexAt(p: Position): number {
    return p.commit === p.prepare ? this.log.indexAt(p.commit) : -1;
  }

  /** A Readable that yields what `gen` yields; `cancel()` ends it; with `hangReads` it never starts. */
  private readable<T>(gen: () => AsyncGenerator<T>) {
    const out = new PassThrough({ objectMode: true });
    let cancelled = false;
    const pump = async () => {
      try {
        for await (const item of gen()) {
          if (cancelled || out.destroyed) return;
          if (!out.write(item)) await new Promise((r) => out.once('drain', r));
        }
        out.end();
      } catch (err) {
        out.destroy(err as Error);
      }
    };
    if (!this.hangReads) void pump();
    return Object.assign(out, {
      cancel: async () => {
        cancelled = true;
        out.destroy();
      },
    });
  }

  private recorded(r: LogRecord) {
    return {
      streamId: r.streamId,
      id: r.id,
      isJson: true as const,
      revision: r.revision,
      type: r.type,
      created: new Date(Number(r.created / 10_000n)),
      data: JSON.parse(Buffer.from(r.data).toString('utf8')),
      metadata: r.metadata.length ? JSON.parse(Buffer.from(r.metadata).toString('utf8')) : undefined,
      position: { commit: r.position, prepare: r.position },
    };
  }

  private resolvedAll(r: LogRecord) {
    return { event: this.recorded(r), commitPosition: r.position };
  }

  async appendToStream(
    streamName: string,
    event: ProposedEvent | ProposedEvent[],
    options: { expectedRevision?: AppendExpectedRevision; requiresLeader?: boolean } = {},
  ) {
    const { expectedRevision = 'any' } = options;
    this.calls.push({ op: 'appendToStream', stream: streamName, options });
    await Promise.resolve();
    const fault = this.fault('appendToStream');
    if (fault) throw fault;
    if (this.unavailable) throw rawUnavailable();
    const events = Array.isArray(event) ? event : [event];
    // The real client serializes with JSON.stringify: a bigint throws a TypeError here.
    const proposed = events.map((e) => ({
      id: e.id,
      type: e.type,
      contentType: 'application/json',
      data: Buffer.from(JSON.stringify(e.data)),
      metadata: e.metadata === undefined ? new Uint8Array() : Buffer.from(JSON.stringify(e.metadata)),
    }));
    const outcome = this.log.write(streamName, expectedRevision, proposed);
    if (outcome.kind === 'wrong-expected-version') {
      throw this.shape(new WrongExpectedVersionError(undefined, { streamName, expected: expectedRevision, current: outcome.current }));
    }
    return {
      success: true,
      nextExpectedRevision: outcome.lastRevision,
      position: outcome.position >= 0n ? { commit: outcome.position, prepare: outcome.position } : undefined,
    };
  }

  readStream(
    streamName: string,
    options: { fromRevision?: ReadRevision; direction?: string; maxCount?: number | bigint; requiresLeader?: boolean } = {},
  ) {
    const { fromRevision = START, direction = 'forwards', maxCount = Number.MAX_SAFE_INTEGER } = options;
    this.calls.push({ op: 'readStream', stream: streamName, options });
    const self = this;
    const fault = this.fault('readStream');
    async function* gen() {
      await Promise.resolve();
      if (fault) throw fault;
      if (self.unavailable) throw self.shape(new UnavailableError(undefined, 'fake: unavailable'));
      const recs = self.log.stream(streamName);
      if (!recs) throw self.shape(new StreamNotFoundError(undefined, streamName));
      let n = 0;
      const max = Number(maxCount);
      if (direction === BACKWARDS) {
        let i = fromRevision === END ? recs.length - 1 : fromRevision === START ? 0 : Math.min(Number(fromRevision), recs.length - 1);
        for (; i >= 0 && n < max; i--, n++) yield { event: self.recorded(recs[i]) };
      } else {
        let i = fromRevision === START ? 0 : fromRevision === END ? recs.length : Number(fromRevision);
        for (; i < recs.length && n < max; i++, n++) yield { event: self.recorded(recs[i]) };
      }
    }
    return this.readable(gen);
  }

  readAll(options: { fromPosition?: ReadPosition; direction?: string; maxCount?: number | bigint } = {}) {
    const { fromPosition = START, direction = 'forwards', maxCount = Number.MAX_SAFE_INTEGER } = options;
    this.calls.push({ op: 'readAll', options });
    const self = this;
    const fault = this.fault('readAll');
    async function* gen() {
      await Promise.resolve();
      if (fault) throw fault;
      if (self.unavailable) throw self.shape(new UnavailableError(undefined, 'fake: unavailable'));
      const at = typeof fromPosition === 'object' ? self.indexAt(fromPosition) : 0;
      if (at < 0) throw self.shape(invalidPosition());
      const log = self.log.records;
      const max = Number(maxCount);
      let n = 0;
      if (direction === BACKWARDS) {
        // Strictly before the position.
        let i = fromPosition === START ? -1 : fromPosition === END ? log.length - 1 : at - 1;
        for (; i >= 0 && n < max; i--, n++) yield self.resolvedAll(log[i]);
      } else {
        // From the position, inclusive.
        let i = fromPosition === START ? 0 : fromPosition === END ? log.length : at;
        for (; i < log.length && n < max; i++, n++) yield self.resolvedAll(log[i]);
      }
    }
    return this.readable(gen);
  }

  subscribeToAll(options: { fromPosition?: ReadPosition } = {}): FakeSubscription {
    const { fromPosition = START } = options;
    this.calls.push({ op: 'subscribeToAll', options });
    this.subscribeCalls.push(fromPosition);
    const sub = new PassThrough({ objectMode: true }) as FakeSubscription;
    sub.unsubscribe = async () => {
      this.live.delete(sub);
    };
    const fault = this.fault('subscribeToAll');
    if (this.unavailable || fault) {
      const err = fault ?? this.shape(new UnavailableError(undefined, 'fake: unavailable'));
      process.nextTick(() => sub.destroy(err));
      return sub;
    }
    const at = typeof fromPosition === 'object' ? this.indexAt(fromPosition) : 0;
    const invalid = at < 0;
    if (invalid || this.failAfterConfirmation) {
      // The server confirms the subscription, then fails (its catch-up read, access checks…).
      const err = this.shape(invalid ? invalidPosition() : this.failAfterConfirmation!);
      process.nextTick(() => {
        sub.emit('confirmation');
        process.nextTick(() => sub.destroy(err));
      });
      return sub;
    }
    const log = this.log.records;
    // Strictly after the position.
    let i = fromPosition === START ? 0 : fromPosition === END ? log.length : at + 1;
    for (; i < log.length; i++) sub.write(this.resolvedAll(log[i]));
    this.live.add(sub);
    sub.on('close', () => this.live.delete(sub));
    process.nextTick(() => sub.emit('confirmation'));
    return sub;
  }

  /** The server drops every live subscription (connection lost, or slow consumer). */
  dropSubscriptions(err: Error = new UnavailableError(undefined, 'fake: connection lost')): void {
    for (const sub of [...this.live]) {
      this.live.delete(sub);
      sub.destroy(this.shape(err));
    }
  }

  /** The server ends every live subscription without an error. */
  endSubscriptions(): void {
    for (const sub of [...this.live]) {
      this.live.delete(sub);
      sub.end();
    }
  }

  get liveSubscriptions(): number {
    return this.live.size;
  }

  async dispose(): Promise<void> {
    for (const sub of [...this.live]) sub.destroy();
    this.live.clear();
  }
}
