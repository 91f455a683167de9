import { Pool, type PoolClient } from 'pg';
import type { KeyRow, KeyRows } from './key-store';

/** The key table in the PostgreSQL database of the events (a small pool of its own). */
export class PostgresKeyRows implements KeyRows {
  private readonly pool: Pool;
  private ready: Promise<unknown> | null = null;

  constructor(connectionString: string) {
    this.pool = new Pool({ connectionString, max: 2, application_name: 'tollgate-keys' });
    this.pool.on('error', () => undefined);
  }

  private init(): Promise<unknown> {
    this.ready ??= this.pool
      .query(
        `CREATE TABLE IF NOT EXISTS tollgate_data_keys (
          subject text PRIMARY KEY,
          master_key_id text,
          wrapped text,
          created timestamptz NOT NULL DEFAULT now(),
          destroyed timestamptz
        )`,
      )
      .catch((err) => {
        this.ready = null;
        throw err;
      });
    return this.ready;
  }

  async select(subjects: readonly string[]): Promise<KeyRow[]> {
    await this.init();
    const r = await this.pool.query<KeyRow>(
      'SELECT subject, master_key_id AS "masterKeyId", wrapped FROM tollgate_data_keys WHERE subject = ANY($1)',
      [subjects],
    );
    return r.rows;
  }

  async masterKeyIds(): Promise<string[]> {
    await this.init();
    const r = await this.pool.query<{ id: string }>(
      'SELECT DISTINCT master_key_id AS id FROM tollgate_data_keys WHERE wrapped IS NOT NULL',
    );
    return r.rows.map((x) => x.id);
  }

  async insertIfAbsent(row: KeyRow): Promise<void> {
    await this.init();
    await this.pool.query(
      'INSERT INTO tollgate_data_keys (subject, master_key_id, wrapped) VALUES ($1, $2, $3) ON CONFLICT (subject) DO NOTHING',
      [row.subject, row.masterKeyId, row.wrapped],
    );
  }

  async tombstone(subject: string): Promise<boolean> {
    await this.init();
    return this.inTransaction(async (c) => {
      const old = await c.query<{ live: boolean }>(
        'SELECT wrapped IS NOT NULL AS live FROM tollgate_data_keys WHERE subject = $1 FOR UPDATE',
        [subject],
      );
      await c.query(
        `INSERT INTO tollgate_data_keys AS k (subject, master_key_id, wrapped, destroyed) VALUES ($1, NULL, NULL, now())
         ON CONFLICT (subject) DO UPDATE SET wrapped = NULL, master_key_id = NULL, destroyed = COALESCE(k.destroyed, now())`,
        [subject],
      );
      return old.rows[0]?.live === true;
    });
  }

  async rewrap(change: (row: KeyRow) => KeyRow | null): Promise<number> {
    await this.init();
    return this.inTransaction(async (c) => {
      const rows = await c.query<KeyRow>(
        'SELECT subject, master_key_id AS "masterKeyId", wrapped FROM tollgate_data_keys WHERE wrapped IS NOT NULL FOR UPDATE',
      );
      let n = 0;
      for (const r of rows.rows) {
        const next = change(r);
        if (!next) continue;
        await c.query('UPDATE tollgate_data_keys SET master_key_id = $2, wrapped = $3 WHERE subject = $1', [
          next.subject,
          next.masterKeyId,
          next.wrapped,
        ]);
        n++;
      }
      return n;
    });
  }

  private async inTransaction<T>(fn: (c: PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
