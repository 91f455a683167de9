import type { Redis, RedisOptions } from 'ioredis';
import type { Config } from './config';
import type { KeyStore } from './crypto/key-store';
import type { SigningKeys } from './crypto/signing-key';
import type { EventStore } from './eventstore/port';
import type { Logger } from './log';
import type { Metrics } from './metrics/metrics';
import type { AppendFailure } from './metrics/observed-store';
import type { Keyspace } from './projections/keyspace';
import type { ProjectionProgress } from './projections/progress';
import type { ReadModelReadiness } from './projections/readiness';
import type { ReadModels } from './projections/read-models';

/**
 * What the platform itself needs of the services the composition root builds (src/init.ts): the
 * store, Redis, the read models, metrics, the clock and ids. The root's Services extends it with the
 * areas' ports, so a platform file never names an area, not even through a type.
 */
export interface PlatformServices {
  config: Config;
  log: Logger;
  store: EventStore;
  /** The shared command connection. Use `connectRedis` for subscribers, BullMQ and the runner. */
  redis: Redis;
  ks: Keyspace;
  readModels: ReadModels;
  /** Set by the composition root: waits until projections applied a position. */
  progress: ProjectionProgress;
  /** Set by the composition root in the api role: which read models are ready to answer from. */
  readiness?: ReadModelReadiness;
  /** This process's Prometheus registry and instruments. */
  metrics: Metrics;
  /** Whether the event store took the last append (for /readyz). */
  storeWrites: { readonly lastAppendFailure: AppendFailure | null };
  /** The data keys of subjects (users, workspaces' secrets): erasure destroys one (docs/SECURITY.md). */
  keys: KeyStore;
  /** The Ed25519 keys that sign receipts (RECEIPT_SIGNING_KEY, else generated under DATA_DIR) and the retired ones still published. */
  signingKeys: SigningKeys;
  /** HMAC-SHA256 (hex) with a secret derived from the master key: stream names that must not be reversible (email-{…}). */
  lookupHash(value: string): string;
  now: () => Date;
  newId: () => string;
  /** A new connection of its own, closed with the services. */
  connectRedis(name: string, opts?: RedisOptions): Promise<Redis>;
  /**
   * Registers a step for close(): the steps run in registration order, before the connections and
   * the store close (a part built inside a router, which has no shutdown of its own, stops its
   * background work there).
   */
  onClose(step: () => void | Promise<void>): void;
  close(): Promise<void>;
}
