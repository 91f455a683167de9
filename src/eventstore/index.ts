import { join } from 'node:path';
import type { EventStore } from './port';
import { SqliteEventStore } from './sqlite';

export type { EventStore } from './port';

export interface EventStoreConfig {
  EVENT_STORE: 'sqlite' | 'esdb';
  DATA_DIR: string;
  EVENTSTORE_CONNECTION_STRING?: string;
}

/**
 * Opens the configured adapter: the embedded SQLite file `${DATA_DIR}/events.sqlite` (default) or
 * EventStoreDB. The EventStoreDB client (gRPC) is loaded only when it is used.
 */
export function openEventStore(config: EventStoreConfig): EventStore {
  if (config.EVENT_STORE === 'esdb') {
    if (!config.EVENTSTORE_CONNECTION_STRING) {
      throw new TypeError('EVENTSTORE_CONNECTION_STRING is required when EVENT_STORE=esdb');
    }
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { EsdbEventStore } = require('./esdb') as typeof import('./esdb');
    return new EsdbEventStore({ connectionString: config.EVENTSTORE_CONNECTION_STRING });
  }
  return new SqliteEventStore({ file: join(config.DATA_DIR, 'events.sqlite') });
}
