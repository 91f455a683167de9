import Database from 'better-sqlite3';
import type { PlaintextRows, StoredRow } from './seal-plaintext';

/**
 * The events table of the SQLite store, opened on a connection of its own for the in-place seal
 * (./seal-plaintext.ts). secure_delete: the bytes a rewrite frees are zeroed, not left in the pages.
 */
export class SqlitePlaintextRows implements PlaintextRows {
  private readonly db: Database.Database;

  constructor(readonly where: string) {
    this.db = new Database(where, { fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('secure_delete = ON');
  }

  private inTypes(types: readonly string[]): string {
    return types.map(() => '?').join(',');
  }

  async count(types: readonly string[]): Promise<number> {
    const r = this.db.prepare(`SELECT count(*) AS n FROM events WHERE type IN (${this.inTypes(types)})`).get(...types) as { n: number };
    return r.n;
  }

  async scan(types: readonly string[], after: bigint, limit: number): Promise<StoredRow[]> {
    const rows = this.db
      .prepare(
        `SELECT position, stream_id AS stream, type, data FROM events WHERE position > ? AND type IN (${this.inTypes(types)}) ORDER BY position LIMIT ?`,
      )
      .safeIntegers(true)
      .all(after, ...types, limit) as { position: bigint; stream: string; type: string; data: string }[];
    return rows.map((r) => ({ position: r.position, stream: r.stream, type: r.type, data: JSON.parse(r.data) as Record<string, unknown> }));
  }

  async streamExists(stream: string): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM events WHERE stream_id = ? LIMIT 1').get(stream) !== undefined;
  }

  async rewrite(renames: readonly { from: string; to: string }[], rows: readonly { position: bigint; type: string; data: string }[]) {
    const move = this.db.prepare('UPDATE events SET stream_id = ? WHERE stream_id = ?');
    const update = this.db.prepare('UPDATE events SET type = ?, data = ? WHERE position = ?');
    this.db
      .transaction(() => {
        for (const r of renames) move.run(r.to, r.from);
        for (const r of rows) update.run(r.type, r.data, r.position);
      })
      .immediate();
  }

  async compact(): Promise<void> {
    // VACUUM writes the whole database anew (no freed page keeps an old row), then the checkpoint
    // copies it into the file and empties the write-ahead log, which held the old pages too.
    this.db.exec('VACUUM');
    const [r] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    if (r?.busy) throw new Error(`${this.where} is in use: stop the service, then run this again to finish the compaction`);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
