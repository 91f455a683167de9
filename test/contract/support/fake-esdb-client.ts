/**
 * An in-memory stand-in for the parts of @eventstore/db-client 6.2.1 that EsdbEventStore uses
 * (appendToStream, readStream, readAll, subscribeToAll, dispose). EventStoreDB cannot run on the
 * project's machines, so the contract suite runs the real adapter over this fake to exercise its
 * mapping code: revisions, the client's error classes, system events to skip, paging of $all reads,
 * byte-offset positions, subscriptions that can be dropped, and an unreachable server.
 *
 * It follows the server behaviour documented in PITFALLS.md and the server source:
 * - positions are byte offsets; every event written through gRPC has commit == prepare;
 * - $all reads are inclusive of fromPosition forwards, and return records strictly before it backwards;
 * - subscriptions start strictly after fromPosition;
 * - readStream fails with StreamNotFoundError while iterating;
 * - idempotency: exact revision / no_stream re-sends of the same ids succeed and write nothing;
 *   with `any` it is best effort;
 * - with no server, appendToStream rejects with a raw gRPC error (code 14); reads and subscriptions
 *   fail with UnavailableError.
 * It does not model: links, deleted streams, ACLs, explicit transactions, a server that is slow.
 */
import { randomUUID } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import {
  BACKWARDS,
  END,
  START,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import type { AppendExpectedRevision, Position, ReadPosition, ReadRevision } from '@eventstore/db-client';

interface Rec {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  data: string;
  metadata: string | undefined;
  created: Date;
  position: Position;
}

interface ProposedEvent {
  id: string;
  type: string;
  contentType: string;
  data: unknown;
  metadata?: unknown;
}

type FakeSubscription = PassThrough & { unsubscribe(): Promise<void>; id?: string };

function cmp(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

function rawUnavailable(): Error {
  const err = new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED (fake)');
  return Object.assign(err, { code: 14, details: 'No connection established' });
}

export class FakeEsdbClient {
  private readonly log: Rec[] = [];
  private readonly streams = new Map<string, Rec[]>();
  private readonly live = new Set<FakeSubscription>();
  private offset = 0n;
  private appends = 0;
  /** When true the "server" is unreachable. */
  unavailable = false;
  /** Every fromPosition a subscription was opened with, in order. */
  readonly subscribeCalls: ReadPosition[] = [];
  /** Write a system event after every n-th append (0: never). */
  systemEventEvery = 3;

  constructor() {
    // A fresh server's log starts with its own records.
    this.writeSystem('$epoch-information', '$epoch-information');
    this.writeSystem('$settings', '$settings');
  }

  private writeRecord(streamId: string, e: { id: string; type: string; data: string; metadata?: string }): Rec {
    const recs = this.streams.get(streamId) ?? [];
    const rec: Rec = {
      streamId,
      id: e.id,
      revision: BigInt(recs.length),
      type: e.type,
      data: e.data,
      metadata: e.metadata,
      created: new Date(),
      position: { commit: this.offset, prepare: this.offset },
    };
    this.offset += BigInt(120 + Buffer.byteLength(e.data) + Buffer.byteLength(e.metadata ?? ''));
    recs.push(rec);
    this.streams.set(streamId, recs);
    this.log.push(rec);
    return rec;
  }

  private writeSystem(streamId: string, type: string): Rec {
    return this.writeRecord(streamId, { id: randomUUID(), type, data: JSON.stringify({ system: true }) });
  }

  private publish(recs: Rec[]): void {
    for (const sub of this.live) for (const r of recs) sub.write(this.resolvedAll(r));
  }

  private recorded(r: Rec) {
    return {
      streamId: r.streamId,
      id: r.id,
      isJson: true as const,
      revision: r.revision,
      type: r.type,
      created: r.created,
      data: JSON.parse(r.data),
      metadata: r.metadata === undefined ? undefined : JSON.parse(r.metadata),
      position: r.position,
    };
  }

  private resolvedAll(r: Rec) {
    return { event: this.recorded(r), commitPosition: r.position.commit };
  }

  async appendToStream(
    streamName: string,
    event: ProposedEvent | ProposedEvent[],
    { expectedRevision = 'any' }: { expectedRevision?: AppendExpectedRevision } = {},
  ) {
    await Promise.resolve();
    if (this.unavailable) throw rawUnavailable();
    const events = Array.isArray(event) ? event : [event];
    const recs = this.streams.get(streamName) ?? [];
    const current = recs.length - 1;
    const wrong = () =>
      new WrongExpectedVersionError(undefined, {
        streamName,
        expected: expectedRevision,
        current: recs.length ? BigInt(current) : 'no_stream',
      });
    const sameIdsAt = (start: number) =>
      start >= 0 && start + events.length <= recs.length && events.every((e, i) => recs[start + i].id === e.id);
    const idempotent = (start: number) => ({
      success: true,
      nextExpectedRevision: BigInt(start + events.length - 1),
      position: undefined,
    });

    if (expectedRevision === 'any' || expectedRevision === 'stream_exists') {
      if (expectedRevision === 'stream_exists' && recs.length === 0) throw wrong();
      const at = events.length ? recs.findIndex((r) => r.id === events[0].id) : -1;
      if (at >= 0 && sameIdsAt(at)) return idempotent(at);
    } else {
      const expected = expectedRevision === 'no_stream' ? -1 : Number(expectedRevision);
      if (expected < current) {
        if (events.length && sameIdsAt(expected + 1)) return idempotent(expected + 1);
        throw wrong();
      }
      if (expected > current) throw wrong();
    }
    // The real client serializes with JSON.stringify: a bigint throws a TypeError here.
    const encoded = events.map((e) => ({
      id: e.id,
      type: e.type,
      data: JSON.stringify(e.data),
      metadata: e.metadata === undefined ? undefined : JSON.stringify(e.metadata),
    }));
    const written = encoded.map((e) => this.writeRecord(streamName, e));
    const all = [...written];
    this.appends++;
    if (this.systemEventEvery && this.appends % this.systemEventEvery === 0) {
      all.push(this.writeSystem('$stats-127.0.0.1:2113', '$statsCollected'));
    }
    this.publish(all);
    const last = this.streams.get(streamName)!;
    return {
      success: true,
      nextExpectedRevision: BigInt(last.length - 1),
      // What the server reports for a multi-event write is not pinned down: report the first
      // event's position so the adapter has to find the last one itself.
      position: written.length ? written[0].position : undefined,
    };
  }

  readStream(
    streamName: string,
    {
      fromRevision = START,
      direction = 'forwards',
      maxCount = Number.MAX_SAFE_INTEGER,
    }: { fromRevision?: ReadRevision; direction?: string; maxCount?: number | bigint } = {},
  ) {
    const self = this;
    async function* gen() {
      await Promise.resolve();
      if (self.unavailable) throw new UnavailableError(undefined, 'fake: unavailable');
      const recs = self.streams.get(streamName);
      if (!recs) throw new StreamNotFoundError(undefined, streamName);
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
    return Object.assign(Readable.from(gen()), { cancel: async () => undefined });
  }

  readAll({
    fromPosition = START,
    direction = 'forwards',
    maxCount = Number.MAX_SAFE_INTEGER,
  }: { fromPosition?: ReadPosition; direction?: string; maxCount?: number | bigint } = {}) {
    const self = this;
    async function* gen() {
      await Promise.resolve();
      if (self.unavailable) throw new UnavailableError(undefined, 'fake: unavailable');
      const log = self.log;
      const max = Number(maxCount);
      let n = 0;
      if (direction === BACKWARDS) {
        let i = log.length - 1;
        if (fromPosition === START) i = -1;
        else if (fromPosition !== END) while (i >= 0 && cmp(log[i].position, fromPosition) >= 0) i--;
        for (; i >= 0 && n < max; i--, n++) yield self.resolvedAll(log[i]);
      } else {
        let i = 0;
        if (fromPosition === END) i = log.length;
        else if (fromPosition !== START) i = self.firstAtOrAfter(fromPosition);
        for (; i < log.length && n < max; i++, n++) yield self.resolvedAll(log[i]);
      }
    }
    return Object.assign(Readable.from(gen()), { cancel: async () => undefined });
  }

  private firstAtOrAfter(p: Position): number {
    let lo = 0;
    let hi = this.log.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(this.log[mid].position, p) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  subscribeToAll({ fromPosition = START }: { fromPosition?: ReadPosition } = {}): FakeSubscription {
    this.subscribeCalls.push(fromPosition);
    const sub = new PassThrough({ objectMode: true }) as FakeSubscription;
    sub.unsubscribe = async () => {
      this.live.delete(sub);
    };
    if (this.unavailable) {
      process.nextTick(() => sub.destroy(new UnavailableError(undefined, 'fake: unavailable')));
      return sub;
    }
    let i = 0;
    if (fromPosition === END) i = this.log.length;
    else if (fromPosition !== START) {
      i = this.firstAtOrAfter(fromPosition);
      if (i < this.log.length && cmp(this.log[i].position, fromPosition) === 0) i++; // strictly after
    }
    for (; i < this.log.length; i++) sub.write(this.resolvedAll(this.log[i]));
    this.live.add(sub);
    sub.on('close', () => this.live.delete(sub));
    process.nextTick(() => sub.emit('confirmation'));
    return sub;
  }

  /** The server drops every live subscription (connection lost, or slow consumer). */
  dropSubscriptions(err: Error = new UnavailableError(undefined, 'fake: connection lost')): void {
    for (const sub of [...this.live]) {
      this.live.delete(sub);
      sub.destroy(err);
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
