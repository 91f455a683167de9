import { Client } from 'pg';
import type { PlaintextRows, StoredRow } from './seal-plaintext';

/** The events table of the PostgreSQL store, on a connection of its own, for the in-place seal (./seal-plaintext.ts). */
export class PostgresPlaintextRows implements PlaintextRows {
  readonly where = 'tollgate_events';
  private readonly client: Client;
  private connected: Promise<void> | null = null;

  constructor(connectionString: string) {
    this.client = new Client({ connectionString, application_name: 'tollgate-seal-plaintext' });
    this.client.on('error', () => undefined);
  }

  private async c(): Promise<Client> {
    await (this.connected ??= this.client.connect().then(() => undefined));
    return this.client;
  }

  async count(types: readonly string[]): Promise<number> {
    const r = await (await this.c()).query<{ n: string }>('SELECT count(*) AS n FROM tollgate_events WHERE type = ANY($1)', [types]);
    return Number(r.rows[0].n);
  }

  /** ORDER BY names the column: the bare name would sort by the text alias of the select list. */
  async scan(types: readonly string[], after: bigint, limit: number): Promise<StoredRow[]> {
    const r = await (
      await this.c()
    ).query<{ position: string; stream: string; type: string; data: string }>(
      `SELECT position::text AS position, stream_id AS stream, type, data::text AS data FROM tollgate_events
        WHERE position > $1 AND type = ANY($2) ORDER BY tollgate_events.position LIMIT $3`,
      [after.toString(), types, limit],
    );
    return r.rows.map((x) => ({
      position: BigInt(x.position),
      stream: x.stream,
      type: x.type,
      data: JSON.parse(x.data) as Record<string, unknown>,
    }));
  }

  async streamExists(stream: string): Promise<boolean> {
    return (await (await this.c()).query('SELECT 1 FROM tollgate_events WHERE stream_id = $1 LIMIT 1', [stream])).rowCount !== 0;
  }

  async rewrite(renames: readonly { from: string; to: string }[], rows: readonly { position: bigint; type: string; data: string }[]) {
    const c = await this.c();
    await c.query('BEGIN');
    try {
      for (const r of renames) await c.query('UPDATE tollgate_events SET stream_id = $1 WHERE stream_id = $2', [r.to, r.from]);
      for (const r of rows) {
        await c.query('UPDATE tollgate_events SET type = $1, data = $2::json WHERE position = $3', [r.type, r.data, r.position.toString()]);
      }
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  async compact(): Promise<void> {
    // An UPDATE leaves the old row version in the table's pages until they are rewritten: VACUUM FULL
    // writes the table and its indexes anew (an exclusive lock: the service must be stopped).
    await (await this.c()).query('VACUUM FULL tollgate_events');
  }

  async close(): Promise<void> {
    if (this.connected) await this.client.end();
  }
}
