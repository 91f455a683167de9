/**
 * The storage of the EventStoreDB test server: one transaction log, streams indexed over it, and the
 * server's write rules. It survives a restart of the gRPC server (as the real server's disk does).
 *
 * Facts encoded (read in kurrent-io/KurrentDB: IndexWriter.CheckCommit, StorageWriterService,
 * Streams.Append/BatchAppend/Read, RpcExceptions):
 * - positions are byte offsets in the log; every event written through gRPC is its own record with
 *   commit == prepare == the record's offset; an append reports its LAST event's position;
 * - an exact revision below the current one (or no_stream on an existing stream) checks the ids at
 *   the revisions after it: all equal → success with the ORIGINAL last revision and position
 *   (idempotent); first one different → WrongExpectedVersion; a later one different → WrongExpectedVersion
 *   (corrupted idempotency); nothing is written either way;
 * - an exact revision equal to the current one writes with NO id check (a re-send writes duplicates);
 * - `any` / `stream_exists` consult an in-memory id cache that forgets (`forgetIds()`): a hit in this
 *   stream is idempotent, a first-id miss writes again;
 * - the server writes its own records (`$`-prefixed streams and types) between the users'.
 */
import { randomUUID } from 'node:crypto';

export interface LogRecord {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  contentType: string;
  data: Uint8Array;
  metadata: Uint8Array;
  /** .NET ticks (100 ns) since the Unix epoch, as the server sends `created`. */
  created: bigint;
  position: bigint;
}

export interface Proposed {
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  metadata: Uint8Array;
}

/** -1n: no stream; -2n: any; -4n: stream_exists (the server's own encoding). */
export type Expected = bigint | 'any' | 'no_stream' | 'stream_exists';

export type WriteOutcome =
  | { kind: 'success'; lastRevision: bigint; position: bigint }
  | { kind: 'wrong-expected-version'; current: bigint | 'no_stream'; expected: Expected };

/** Log record framing: a fixed header plus the variable parts, like the server's prepare records. */
function recordSize(streamId: string, p: Proposed): bigint {
  return BigInt(82 + Buffer.byteLength(streamId) + Buffer.byteLength(p.type) + p.data.length + p.metadata.length + 8);
}

export class EsdbLog {
  readonly records: LogRecord[] = [];
  private readonly streams = new Map<string, LogRecord[]>();
  private idCache = new Map<string, { streamId: string; revision: bigint }>();
  private listeners = new Set<(r: LogRecord) => void>();
  private writes = 0;
  /** The end of the log: where the next record goes. */
  end = 0n;
  /** A `$statsCollected` record after every n-th write (0: never). */
  systemEvery = 4;

  constructor() {
    this.writeSystem('$epoch-information', '$epoch-information');
    this.writeSystem('$settings', '$settings');
  }

  onAppend(listener: (r: LogRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stream(streamId: string): LogRecord[] | undefined {
    return this.streams.get(streamId);
  }

  /** Index of the record at exactly `position`, `records.length` for the end of the log, -1 otherwise. */
  indexAt(position: bigint): number {
    if (position === this.end) return this.records.length;
    let lo = 0;
    let hi = this.records.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const p = this.records[mid].position;
      if (p === position) return mid;
      if (p < position) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The cache `any` / `stream_exists` consult is lost (eviction, restart). */
  forgetIds(): void {
    this.idCache = new Map();
  }

  private writeRecord(streamId: string, p: Proposed): LogRecord {
    const recs = this.streams.get(streamId) ?? [];
    const rec: LogRecord = {
      streamId,
      id: p.id,
      revision: BigInt(recs.length),
      type: p.type,
      contentType: p.contentType,
      data: p.data,
      metadata: p.metadata,
      created: BigInt(Date.now()) * 10_000n,
      position: this.end,
    };
    this.end += recordSize(streamId, p);
    recs.push(rec);
    this.streams.set(streamId, recs);
    this.records.push(rec);
    this.idCache.set(rec.id, { streamId, revision: rec.revision });
    return rec;
  }

  private writeSystem(streamId: string, type: string): LogRecord {
    const data = Buffer.from(JSON.stringify({ system: true }));
    return this.writeRecord(streamId, { id: randomUUID(), type, contentType: 'application/json', data, metadata: new Uint8Array() });
  }

  write(streamId: string, expected: Expected, events: Proposed[]): WriteOutcome {
    const recs = this.streams.get(streamId) ?? [];
    const current = BigInt(recs.length - 1);
    const wrong = (): WriteOutcome => ({ kind: 'wrong-expected-version', current: recs.length ? current : 'no_stream', expected });
    const idempotent = (last: LogRecord): WriteOutcome => ({ kind: 'success', lastRevision: last.revision, position: last.position });

    if (expected === 'any' || expected === 'stream_exists') {
      if (expected === 'stream_exists' && recs.length === 0) return wrong();
      let last: LogRecord | undefined;
      for (let i = 0; i < events.length; i++) {
        const hit = this.idCache.get(events[i].id);
        if (!hit || hit.streamId !== streamId) {
          if (i === 0) break;
          return wrong();
        }
        last = recs[Number(hit.revision)];
      }
      if (last) return idempotent(last);
    } else {
      const at = expected === 'no_stream' ? -1n : expected;
      if (at < current) {
        if (events.length === 0) return wrong();
        for (let i = 0; i < events.length; i++) {
          const rec = recs[Number(at) + 1 + i];
          if (!rec || rec.id !== events[i].id) return wrong();
        }
        return idempotent(recs[Number(at) + events.length]);
      }
      if (at > current) return wrong();
    }
    const written = events.map((e) => this.writeRecord(streamId, e));
    const all = [...written];
    this.writes++;
    if (this.systemEvery && this.writes % this.systemEvery === 0) all.push(this.writeSystem('$stats-127.0.0.1:2113', '$statsCollected'));
    for (const r of all) for (const l of [...this.listeners]) l(r);
    const last = written[written.length - 1];
    if (!last) return { kind: 'success', lastRevision: current, position: -1n };
    return { kind: 'success', lastRevision: last.revision, position: last.position };
  }
}
