import Database from 'better-sqlite3';
import type { KeyRow, KeyRows } from './key-store';

/**
 * The key table in the SQLite file of the events (its own connection). secure_delete: a destroyed
 * key's bytes are overwritten in the database pages, not left in the freelist.
 */
export class SqliteKeyRows implements KeyRows {
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('secure_delete = ON');
    this.db.exec(`CREATE TABLE IF NOT EXISTS data_keys (
      subject TEXT PRIMARY KEY,
      master_key_id TEXT,
      wrapped TEXT,
      created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      destroyed TEXT
    )`);
  }

  /** One statement for any number of subjects (a JSON array): prepared once, not per call as an IN list would be. */
  private readonly selectMany = () =>
    (this.selectStatement ??= this.db.prepare(
      'SELECT subject, master_key_id AS masterKeyId, wrapped FROM data_keys WHERE subject IN (SELECT value FROM json_each(?))',
    ));
  private selectStatement: Database.Statement | undefined;

  async select(subjects: readonly string[]): Promise<KeyRow[]> {
    return this.selectMany().all(JSON.stringify(subjects)) as KeyRow[];
  }

  async masterKeyIds(): Promise<string[]> {
    const rows = this.db.prepare('SELECT DISTINCT master_key_id AS id FROM data_keys WHERE wrapped IS NOT NULL').all() as { id: string }[];
    return rows.map((r) => r.id);
  }

  async insertIfAbsent(r: KeyRow): Promise<void> {
    this.db
      .prepare('INSERT INTO data_keys (subject, master_key_id, wrapped) VALUES (?, ?, ?) ON CONFLICT(subject) DO NOTHING')
      .run(r.subject, r.masterKeyId, r.wrapped);
  }

  async tombstone(subject: string): Promise<boolean> {
    return this.db
      .transaction(() => {
        const live = this.db.prepare('SELECT 1 FROM data_keys WHERE subject = ? AND wrapped IS NOT NULL').get(subject) !== undefined;
        this.db
          .prepare(
            `INSERT INTO data_keys (subject, master_key_id, wrapped, destroyed) VALUES (?, NULL, NULL, strftime('%Y-%m-%dT%H:%M:%fZ','now'))
             ON CONFLICT(subject) DO UPDATE SET wrapped = NULL, master_key_id = NULL, destroyed = COALESCE(destroyed, excluded.destroyed)`,
          )
          .run(subject);
        return live;
      })
      .immediate();
  }

  async rewrap(change: (row: KeyRow) => KeyRow | null): Promise<number> {
    return this.db
      .transaction(() => {
        const rows = this.db
          .prepare('SELECT subject, master_key_id AS masterKeyId, wrapped FROM data_keys WHERE wrapped IS NOT NULL')
          .all() as KeyRow[];
        const update = this.db.prepare('UPDATE data_keys SET master_key_id = ?, wrapped = ? WHERE subject = ?');
        let n = 0;
        for (const r of rows) {
          const next = change(r);
          if (!next) continue;
          update.run(next.masterKeyId, next.wrapped, next.subject);
          n++;
        }
        return n;
      })
      .immediate();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
