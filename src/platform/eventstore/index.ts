import { join } from 'node:path';
import type { EventStore } from './port';
import { SqliteEventStore } from './sqlite';

export type { EventStore } from './port';

export interface EventStoreConfig {
  EVENT_STORE: 'sqlite' | 'esdb' | 'postgres';
  DATA_DIR: string;
  EVENTSTORE_CONNECTION_STRING?: string;
  DATABASE_URL?: string;
}

/**
 * Opens the configured adapter: the embedded SQLite file `${DATA_DIR}/events.sqlite` (default) or
 * EventStoreDB or PostgreSQL. Their clients are loaded only when used. PostgreSQL creates or migrates
 * its schema on first use (ping() at start-up).
 */
export function openEventStore(config: EventStoreConfig): EventStore {
  if (config.EVENT_STORE === 'postgres') {
    if (!config.DATABASE_URL) throw new TypeError('DATABASE_URL is required when EVENT_STORE=postgres');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { PostgresEventStore } = require('./postgres') as typeof import('./postgres');
    return new PostgresEventStore({ connectionString: config.DATABASE_URL });
  }
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
