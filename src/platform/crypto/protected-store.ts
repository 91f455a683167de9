import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
  Subscription,
} from '../eventstore/port';
import { open, seal } from './aead';
import type { KeyStore } from './key-store';
import { SubjectErased } from './key-store';

/** What an erased field reads as, everywhere: projections, the portal, exports, `tollgate events read`. */
export const ERASED = '[erased]';

/**
 * An event type with fields that must never reach the log in plain text. The domain writes and
 * reads `type`; the store holds `storedAs` (a new version: the other fields as they are, plus
 * `subject` and `<field>Enc` sealed with the subject's data key, null once the subject is erased).
 */
export interface ProtectedEventType {
  type: string;
  storedAs: string;
  /** The data key's owner, from the event's data: `user:{id}` for personal data, `workspace:{id}` for a workspace's secrets. */
  subject(data: Record<string, unknown>): string;
  fields: readonly string[];
  /**
   * For `tollgate events seal-plaintext` (./seal-plaintext.ts): where a stream named from a plain
   * field before encryption moves (a released event of this type on it names it), or undefined
   * when it keeps its name. `taken`: the name when `to` already exists.
   */
  renameLegacyStream?(
    stream: string,
    data: Record<string, unknown>,
    lookupHash: (value: string) => string,
  ): { to: string; taken: string } | undefined;
}

type Data = Record<string, unknown>;

/**
 * The event store as every area sees it: seals protected fields on append and opens them on read,
 * so no personal field or secret is ever written in plain text, and an erased subject's fields read
 * as ERASED (its old plain-text events too, until they are migrated: docs/SECURITY.md). Events of
 * any other type pass through untouched (the inference hot path pays one Map lookup).
 */
export class ProtectedStore implements EventStore {
  private readonly byType = new Map<string, ProtectedEventType>();
  private readonly byStored = new Map<string, ProtectedEventType>();

  constructor(
    /** The store itself: what is written there is what the file holds (migrations and their tests use it). */
    readonly inner: EventStore,
    readonly keys: KeyStore,
    protectedTypes: readonly ProtectedEventType[],
  ) {
    for (const p of protectedTypes) {
      this.byType.set(p.type, p);
      this.byStored.set(p.storedAs, p);
    }
  }

  /** The protected event types, as released (`type`) and as stored (`storedAs`). */
  get protectedTypes(): ProtectedEventType[] {
    return [...this.byType.values()];
  }

  get kind(): EventStore['kind'] {
    return this.inner.kind;
  }

  /** Not async: an append with no protected event is the inner store's own promise (the inference hot path). */
  append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    if (!events.some((e) => this.byType.has(e.type))) return this.inner.append(stream, events, opts);
    return this.appendSealed(stream, events, opts);
  }

  private async appendSealed(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    const sealed: NewEvent[] = [];
    for (const e of events) sealed.push(await this.seal(e));
    return this.inner.append(stream, sealed, opts);
  }

  readAll(opts?: ReadAllOptions): Promise<RecordedEvent[]> {
    return this.inner.readAll({ ...opts, decode: this.decodeSet(opts?.decode) }).then((events) => this.openAll(events, opts?.decode));
  }

  subscribeToAll(opts?: SubscribeOptions): Subscription {
    const sub = this.inner.subscribeToAll({ ...opts, decode: this.decodeSet(opts?.decode) });
    // A plain iterator, not an async generator: an event of another type costs one Map lookup and
    // no extra promise (the projector's hot path; docs/BENCHMARKS.md, "Personal data sealed").
    return {
      close: () => sub.close(),
      [Symbol.asyncIterator]: () => {
        const it = sub[Symbol.asyncIterator]();
        return {
          next: () =>
            it
              .next()
              .then((r) =>
                r.done || !this.isProtected(r.value)
                  ? r
                  : Promise.resolve(this.openAll([r.value], opts?.decode)).then(([value]) => ({ done: false as const, value })),
              ),
          return: async (value?: unknown) => {
            await it.return?.(value);
            return { done: true as const, value: undefined };
          },
        };
      },
    };
  }

  readStream(stream: string, opts?: ReadStreamOptions): Promise<RecordedEvent[]> {
    return this.inner.readStream(stream, opts).then((events) => this.openAll(events));
  }

  headPosition(): Promise<bigint> {
    return this.inner.headPosition();
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  async close(): Promise<void> {
    await this.inner.close();
    await this.keys.close();
  }

  /** Reading a released type means reading its stored version too. */
  private decodeSet(decode: ReadonlySet<string> | undefined): ReadonlySet<string> | undefined {
    if (!decode) return undefined;
    const extra = [...decode].flatMap((t) => (this.byType.has(t) ? [this.byType.get(t)!.storedAs] : []));
    return extra.length ? new Set([...decode, ...extra]) : decode;
  }

  private isProtected(e: RecordedEvent): boolean {
    return this.byStored.has(e.type) || this.byType.has(e.type);
  }

  /** The event as the store must hold it: a protected type as its stored version, fields sealed (null once the subject is erased). */
  async seal(e: NewEvent): Promise<NewEvent> {
    const p = this.byType.get(e.type);
    if (!p) return e;
    const data = e.data as Data;
    const subject = p.subject(data);
    let key: Buffer | null;
    try {
      key = await this.keys.getOrCreate(subject);
    } catch (err) {
      if (!(err instanceof SubjectErased)) throw err;
      key = null;
    }
    const out: Data = {};
    for (const [k, v] of Object.entries(data)) if (!p.fields.includes(k)) out[k] = v;
    out.subject = subject;
    for (const f of p.fields) {
      out[`${f}Enc`] =
        key === null || data[f] === undefined || data[f] === ERASED
          ? null
          : seal(key, JSON.stringify(data[f]), `${p.storedAs}:${f}:${subject}`);
    }
    return { ...e, type: p.storedAs, data: out };
  }

  /**
   * One key lookup for the whole batch; events of other types are returned as they are (still lazily
   * parsed). A batch with no protected event is returned as it is, without an extra promise.
   */
  private openAll(events: RecordedEvent[], decode?: ReadonlySet<string>): RecordedEvent[] | Promise<RecordedEvent[]> {
    const subjects: string[] = [];
    for (const e of events) {
      const stored = this.byStored.get(e.type);
      if (stored) subjects.push((e.data as Data).subject as string);
      else {
        const plain = this.byType.get(e.type);
        if (plain) subjects.push(plain.subject(e.data as Data));
      }
    }
    if (subjects.length === 0) return events;
    return this.keys.get(subjects).then((keys) => this.openWith(events, keys, decode));
  }

  private openWith(events: RecordedEvent[], keys: Map<string, Buffer | null>, decode?: ReadonlySet<string>): RecordedEvent[] {
    return events.map((e) => {
      const stored = this.byStored.get(e.type);
      // A type the reader does not look into (ReadAllOptions.decode: a projector replaying): opened
      // only if its data is read, as the adapters parse such events only when read.
      if (stored && decode && !decode.has(stored.type)) return this.openLazily(e, stored, keys);
      if (stored) return this.openEvent(e, stored, keys);
      const plain = this.byType.get(e.type);
      // A plain-text event written before encryption: its subject's erasure still hides it.
      if (plain && keys.get(plain.subject(e.data as Data)) === null) return { ...e, data: erase(e.data as Data, plain.fields) };
      return e;
    });
  }

  private openLazily(e: RecordedEvent, p: ProtectedEventType, keys: Map<string, Buffer | null>): RecordedEvent {
    let data: unknown;
    let opened = false;
    const open = () => {
      if (!opened) data = this.openEvent(e, p, keys).data;
      opened = true;
      return data;
    };
    const out = { ...e, type: p.type };
    Object.defineProperty(out, 'data', { enumerable: true, configurable: true, get: open });
    return out as RecordedEvent;
  }

  private openEvent(e: RecordedEvent, p: ProtectedEventType, keys: Map<string, Buffer | null>): RecordedEvent {
    const data = e.data as Data;
    const subject = data.subject as string;
    const key = keys.get(subject);
    const out: Data = {};
    for (const [k, v] of Object.entries(data)) if (k !== 'subject' && !(k.endsWith('Enc') && p.fields.includes(k.slice(0, -3)))) out[k] = v;
    for (const f of p.fields) {
      const sealed = data[`${f}Enc`];
      out[f] = key && typeof sealed === 'string' ? JSON.parse(open(key, sealed, `${p.storedAs}:${f}:${subject}`).toString('utf8')) : ERASED;
    }
    return { ...e, type: p.type, data: out };
  }
}

function erase(data: Data, fields: readonly string[]): Data {
  const out = { ...data };
  for (const f of fields) if (f in out) out[f] = ERASED;
  return out;
}
