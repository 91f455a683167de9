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
  return {
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
}

/** Replaces the lazy accessor with the value, so later reads (and spreads, equality checks) see a plain property. */
function settle<T>(event: RecordedEvent, key: 'data' | 'metadata', value: T): T {
  Object.defineProperty(event, key, { value, writable: true, enumerable: true, configurable: true });
  return value;
}
