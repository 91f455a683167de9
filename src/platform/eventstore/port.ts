/**
 * The event store port. Adapters: ./sqlite (default, embedded), ./esdb (EventStoreDB) and ./postgres.
 * All pass the same contract suite in test/platform/contract.
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
  /**
   * uuid. An id already in the stream is never written twice, on every adapter:
   * - re-sent with the expected revision of the first append (or no_stream): the original result, nothing written;
   * - re-sent with `any` / `stream_exists`, the same events in the same order: the original result;
   * - any other re-send (the stream's current revision, a partial or reordered batch): WrongExpectedVersion.
   */
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
  /**
   * Inclusive. Default: the beginning. 0n or the position of a recorded event, never arithmetic on one
   * (EventStoreDB positions are byte offsets: `position + 1` is inside a record and is refused, RangeError).
   */
  fromPosition?: bigint;
  maxCount?: number;
  /**
   * The event types whose data and metadata the reader will look into. Events of other types are
   * still returned, with the same values, but an adapter may parse their JSON only when first read
   * (./decode.ts): the projector skips most of the events it replays. Default: every type.
   */
  decode?: ReadonlySet<string>;
}

export interface SubscribeOptions {
  /** Exclusive: the subscription yields events strictly after this position (0n or an event's). Default: from the start. */
  after?: bigint;
  /** As ReadAllOptions.decode: the types whose data the subscriber looks into; others may be parsed only when read. */
  decode?: ReadonlySet<string>;
}

export interface Subscription extends AsyncIterable<RecordedEvent> {
  close(): Promise<void>;
}

export interface EventStore {
  readonly kind: 'sqlite' | 'esdb' | 'postgres';
  /** At least one event (an empty append is a TypeError). */
  append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;
  /** A missing stream reads as empty. */
  readStream(stream: string, opts?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(opts?: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * Resubscribes from its last position when the store cannot be reached (with backoff); any other
   * error (a bad position, access denied) ends the iteration with that error.
   */
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

/**
 * What every adapter checks before an append: at least one event (an empty append has no meaning,
 * and EventStoreDB would still write a record for it), and no bigint in data or metadata.
 */
export function assertAppendable(stream: string, events: readonly NewEvent[]): void {
  assertNotEmpty(stream, events);
  for (const e of events) {
    assertJsonSafe(e.data, `${e.type}.data`);
    assertJsonSafe(e.metadata ?? {}, `${e.type}.metadata`);
  }
}

export function assertNotEmpty(stream: string, events: readonly NewEvent[]): void {
  if (events.length === 0) throw new TypeError(`append to ${stream} needs at least one event`);
}

/** Refuses bigint anywhere in a value that is about to be serialized into an event. */
export function assertJsonSafe(value: unknown, path = 'data'): void {
  if (typeof value === 'bigint') throw new TypeError(`${path} is a bigint: encode amounts as decimal strings`);
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) assertJsonSafe(v, `${path}.${k}`);
  }
}
