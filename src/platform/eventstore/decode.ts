import type { EventMetadata, RecordedEvent } from './port';

/**
 * A stored event from its columns, `data` and `metadata` still JSON text. With `decode` (the types
 * the reader will look into, ReadAllOptions.decode) an event of any other type keeps its JSON until
 * someone reads `data` or `metadata`: the projector replays every event but most projections skip
 * most of them (InferenceCompleted, a third of the traffic, is handled by none), and their
 * JSON.parse and the objects it leaves were a large share of its CPU and garbage. The values read
 * are the same either way; each is parsed once, on first read, and then held as a plain property.
 */
export function recordedFromJson(
  position: bigint,
  id: string,
  stream: string,
  revision: bigint,
  type: string,
  data: string,
  metadata: string,
  created: string,
  decode: ReadonlySet<string> | undefined,
): RecordedEvent {
  if (!decode || decode.has(type)) {
    return { id, stream, revision, position, type, data: JSON.parse(data), metadata: JSON.parse(metadata), created };
  }
  const event: RecordedEvent = {
    id,
    stream,
    revision,
    position,
    type,
    get data(): unknown {
      return settle(this, 'data', JSON.parse(data));
    },
    set data(v: unknown) {
      settle(this, 'data', v);
    },
    get metadata(): EventMetadata {
      return settle(this, 'metadata', JSON.parse(metadata) as EventMetadata);
    },
    set metadata(v: EventMetadata) {
      settle(this, 'metadata', v);
    },
    created,
  };
  unparsed.set(event, data);
  return event;
}

/** The JSON text of each event whose `data` is not parsed yet (dropped when it is read or replaced). */
const unparsed = new WeakMap<RecordedEvent, string>();

/** Replaces the lazy accessor with the value, so later reads (and spreads, equality checks) see a plain property. */
function settle<T>(event: RecordedEvent, key: 'data' | 'metadata', value: T): T {
  if (key === 'data') unparsed.delete(event);
  Object.defineProperty(event, key, { value, writable: true, enumerable: true, configurable: true });
  return value;
}

/**
 * `event.data[key]` when it is a string (else undefined), read from the JSON text when the data is
 * not parsed yet, which then stays unparsed: a partition's runner finds each event's workspace
 * this way (projections/partitions.ts), and most events are another partition's, which it never
 * looks into otherwise.
 */
export function dataString(event: RecordedEvent, key: string): string | undefined {
  const json = unparsed.get(event);
  if (json !== undefined) {
    const found = topLevelString(json, key);
    if (found !== UNSURE) return found;
  }
  const v = (event.data as Record<string, unknown> | null)?.[key];
  return typeof v === 'string' ? v : undefined;
}

/** A key or value the scanner does not read itself (an escape in a key, text that is not an object): parse instead. */
export const UNSURE = Symbol('unsure');

/**
 * The string value of `key` among the top-level members of the JSON object text `json`
 * (undefined: absent or not a string), without building anything but the value: strings are
 * skipped with indexOf, nesting is counted. A key written with an escape is UNSURE (the text
 * would have to be unescaped to compare it); the first of repeated keys is taken, where JSON.parse
 * takes the last, and no writer of events repeats one (JSON.stringify cannot).
 */
export function topLevelString(json: string, key: string): string | undefined | typeof UNSURE {
  let depth = 0;
  let i = 0;
  // The next backslash at or after the scan (moves forward only): -1 when there is none.
  let backslash = json.indexOf('\\');
  while (i < json.length && isSpace(json.charCodeAt(i))) i++;
  if (json.charCodeAt(i) !== 0x7b /* { */) return UNSURE;
  for (; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(json, i);
      if (depth === 1) {
        let j = end + 1;
        while (isSpace(json.charCodeAt(j))) j++;
        // At depth 1 of an object, a string followed by a colon is a member's name.
        if (json.charCodeAt(j) === 0x3a /* : */) {
          while (backslash >= 0 && backslash < i) backslash = json.indexOf('\\', backslash + 1);
          if (backslash >= 0 && backslash < end) return UNSURE;
          if (end - i - 1 === key.length && json.startsWith(key, i + 1)) {
            j++;
            while (isSpace(json.charCodeAt(j))) j++;
            if (json.charCodeAt(j) !== 0x22) return undefined;
            const close = stringEnd(json, j);
            const raw = json.slice(j + 1, close);
            return raw.includes('\\') ? (JSON.parse(json.slice(j, close + 1)) as string) : raw;
          }
        }
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b /* [ */) depth++;
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return undefined;
}

/** Index of the quote closing the string opened at `open` (one preceded by an even run of backslashes). */
function stringEnd(json: string, open: number): number {
  for (let q = json.indexOf('"', open + 1); q >= 0; q = json.indexOf('"', q + 1)) {
    let backslashes = 0;
    while (json.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return json.length;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
