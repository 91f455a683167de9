import type { QueryConfig } from 'pg';
import { batchColumns, PendingAppend, PostgresEventStore, PostgresOptions } from '../../src/platform/eventstore/postgres';

/**
 * The PostgreSQL store appending the way older schema versions' stores did, for the benches that
 * measure those designs against today's in one run (the database keeps their functions: a schema
 * migration never drops a function a released store called):
 *  - 'version3': schema version 3's lock-free store (tollgate_append_grouped, each append decided by a
 *    call of its own; everything queued sent as one batch, up to 4 in flight);
 *  - 'locked': before version 3 (the same function taking the advisory append lock around the batch's
 *    INSERT, one batch in flight).
 */
export class OlderAppendStore extends PostgresEventStore {
  private readonly lock: boolean;

  constructor(opts: PostgresOptions & { append: 'version3' | 'locked' }) {
    const { append, ...rest } = opts;
    super(append === 'locked' ? { ...rest, maxBatchesInFlight: 1 } : rest);
    this.lock = append === 'locked';
  }

  protected override appendStatement(batch: PendingAppend[], created: Date): QueryConfig {
    const c = batchColumns(batch);
    // tollgate_append_grouped takes data and metadata as text[], and the lock as its last argument.
    return {
      text: 'SELECT ord, ok, revision, pos FROM tollgate_append_grouped($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
      values: [c.streams, c.expected, c.offsets, c.counts, c.ids, c.types, c.data, c.meta, created, this.lock],
    };
  }
}
