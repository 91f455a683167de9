/**
 * The event store port. Adapters: ./sqlite (default, embedded) and ./esdb (EventStoreDB).
 * Both pass the same contract suite in test/contract.
 *
 * No bigint ever goes into event data or metadata: amounts and positions travel as decimal strings.
 */

export type ExpectedRevision = bigint | 'no_stream' | 'stream_exists' | 'any';

export interface EventMetadata {
  actor?: string;
  correlationId?: string;
  causationId?: string;
  [k: string]: unknown;
}

export interface NewEvent<Type extends string = string, Data = unknown> {
  /** uuid; re-sending the same ids with the same exact expected revision is an idempotent no-op. */
  id: string;
  type: Type;
  data: Data;
  metadata?: EventMetadata;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  id: string;
  stream: string;
  /** Revision of this event within its stream, from 0. */
  revision: bigint;
  /** Global position, ordered within one store (SQLite: 1, 2, 3…; EventStoreDB: commit position). */
  position: bigint;
  type: Type;
  data: Data;
  metadata: EventMetadata;
  /** ISO-8601 time the store recorded the event. */
  created: string;
}

export interface AppendResult {
  /** Revision of the stream's last event after the append. */
  nextExpectedRevision: bigint;
  /** Global position of the last event written (or found, on an idempotent retry). */
  position: bigint;
}

export interface ReadStreamOptions {
  /** Inclusive start revision; default: the first (forwards) or last (backwards). */
  from?: bigint;
  direction?: 'forwards' | 'backwards';
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Inclusive. Default: the beginning. */
  fromPosition?: bigint;
  maxCount?: number;
}

export interface SubscribeOptions {
  /** Exclusive: the subscription yields events strictly after this position. Default: from the start. */
  after?: bigint;
}

export interface Subscription extends AsyncIterable<RecordedEvent> {
  close(): Promise<void>;
}

export interface EventStore {
  readonly kind: 'sqlite' | 'esdb';
  append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;
  /** A missing stream reads as empty. */
  readStream(stream: string, opts?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(opts?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Resubscribes from its last position when the connection drops. */
  subscribeToAll(opts?: SubscribeOptions): Subscription;
  /** Position of the newest event in the store, 0n when empty. */
  headPosition(): Promise<bigint>;
  /** Throws StoreUnavailable when the store cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export class WrongExpectedVersion extends Error {
  override readonly name = 'WrongExpectedVersion';
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    /** The stream's current revision, or 'no_stream'. */
    readonly actual: bigint | 'no_stream',
  ) {
    super(`wrong expected version on ${stream}: expected ${String(expected)}, actual ${String(actual)}`);
  }
}

export class StoreUnavailable extends Error {
  override readonly name = 'StoreUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Refuses bigint anywhere in a value that is about to be serialized into an event. */
export function assertJsonSafe(value: unknown, path = 'data'): void {
  if (typeof value === 'bigint') throw new TypeError(`${path} is a bigint: encode amounts as decimal strings`);
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) assertJsonSafe(v, `${path}.${k}`);
  }
}

export function describeRevision(r: ExpectedRevision): string {
  return typeof r === 'bigint' ? r.toString() : r;
}
