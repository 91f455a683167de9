import { randomBytes } from 'node:crypto';
import { open, seal } from './aead';
import { ConfigError } from '../config';
import type { MasterKeys } from './master-key';

/**
 * Data keys per subject (a user, a workspace's secrets), kept outside the event log and wrapped by
 * the master key. Erasing a subject destroys its key: the events stay, their sealed fields no
 * longer open (crypto-shredding, docs/SECURITY.md). Adapters: ./sqlite-key-rows, ./postgres-key-rows.
 */
export interface KeyStore {
  /** Each subject's data key; null when the subject was erased; absent when it has none yet. */
  get(subjects: readonly string[]): Promise<Map<string, Buffer | null>>;
  /** The subject's key, made on first use (random, or `initial`). An erased subject throws SubjectErased. */
  getOrCreate(subject: string, initial?: Buffer): Promise<Buffer>;
  /** Destroys the key for good (a tombstone stays, so it is never made again); false when already erased. */
  destroy(subject: string): Promise<boolean>;
  /** Re-wraps every live key with the current master key; returns how many changed. */
  rewrapAll(): Promise<number>;
  /**
   * Throws a ConfigError naming MASTER_KEY when a live data key is wrapped by a master key this
   * process does not have: checked at start, so a process given another store's key stops there
   * instead of failing on every sealed event it reads.
   */
  checkMasterKey(): Promise<void>;
  close(): Promise<void>;
}

export class SubjectErased extends Error {
  override readonly name = 'SubjectErased';
  constructor(readonly subject: string) {
    super(`${subject} was erased: its data key is destroyed`);
  }
}

/** A stored row: `wrapped` null is a destroyed key. */
export interface KeyRow {
  subject: string;
  masterKeyId: string | null;
  wrapped: string | null;
}

/** What an adapter stores: rows in a table beside the events. */
export interface KeyRows {
  select(subjects: readonly string[]): Promise<KeyRow[]>;
  /** Inserts unless the subject has a row already (a concurrent creator wins; both then read its key). */
  insertIfAbsent(row: KeyRow): Promise<void>;
  /** Sets the row to a tombstone, inserting one when there is no row; true when a live key was destroyed. */
  tombstone(subject: string): Promise<boolean>;
  /** The distinct master key ids that wrap live keys. */
  masterKeyIds(): Promise<string[]>;
  /** Every live row, then the rewrapped rows written in one transaction. */
  rewrap(change: (row: KeyRow) => KeyRow | null): Promise<number>;
  close(): Promise<void>;
}

const aad = (subject: string) => `data-key:${subject}`;

export class WrappedKeyStore implements KeyStore {
  /**
   * Unwrapped keys by their wrapped form: a replay opens each subject's key once per page and per
   * projection. The row is still read every time, so an erasure (wrapped set to NULL) is seen at
   * once, by every process; only the AES-GCM unwrap of an unchanged row is saved.
   */
  private readonly unwrapped = new Map<string, Buffer>();

  constructor(
    private readonly rows: KeyRows,
    private readonly master: MasterKeys,
  ) {}

  async get(subjects: readonly string[]): Promise<Map<string, Buffer | null>> {
    const out = new Map<string, Buffer | null>();
    if (subjects.length === 0) return out;
    for (const r of await this.rows.select([...new Set(subjects)])) out.set(r.subject, r.wrapped === null ? null : this.unwrap(r));
    return out;
  }

  async getOrCreate(subject: string, initial?: Buffer): Promise<Buffer> {
    const found = (await this.get([subject])).get(subject);
    if (found === null) throw new SubjectErased(subject);
    if (found) return found;
    await this.rows.insertIfAbsent({
      subject,
      masterKeyId: this.master.current.id,
      wrapped: seal(this.master.current.key, initial ?? randomBytes(32), aad(subject)),
    });
    const made = (await this.get([subject])).get(subject);
    if (!made) throw new SubjectErased(subject);
    return made;
  }

  destroy(subject: string): Promise<boolean> {
    for (const k of this.unwrapped.keys()) if (k.split(':').slice(1, -1).join(':') === subject) this.unwrapped.delete(k);
    return this.rows.tombstone(subject);
  }

  rewrapAll(): Promise<number> {
    const cur = this.master.current;
    return this.rows.rewrap((r) =>
      r.masterKeyId === cur.id || r.wrapped === null
        ? null
        : { subject: r.subject, masterKeyId: cur.id, wrapped: seal(cur.key, this.unwrap(r), aad(r.subject)) },
    );
  }

  async checkMasterKey(): Promise<void> {
    const known = [this.master.current.id, this.master.previous?.id];
    const foreign = (await this.rows.masterKeyIds()).filter((id) => !known.includes(id));
    if (foreign.length === 0) return;
    const given =
      this.master.source === 'MASTER_KEY'
        ? `MASTER_KEY${this.master.previous ? ' and MASTER_KEY_PREVIOUS are' : ' is'} not`
        : 'unset, and the generated key file under DATA_DIR is not';
    throw new ConfigError([
      `invalid setting MASTER_KEY: ${given} the master key of this store's data keys (id ${foreign.join(', ')}; this process has ${known.filter(Boolean).join(', ')}): set the MASTER_KEY the store was written with`,
    ]);
  }

  close(): Promise<void> {
    return this.rows.close();
  }

  private unwrap(r: KeyRow): Buffer {
    const cacheKey = `${r.masterKeyId}:${r.subject}:${r.wrapped}`;
    const hit = this.unwrapped.get(cacheKey);
    if (hit) return hit;
    const key = this.unwrapFresh(r);
    if (this.unwrapped.size >= 10_000) this.unwrapped.clear();
    this.unwrapped.set(cacheKey, key);
    return key;
  }

  private unwrapFresh(r: KeyRow): Buffer {
    const m = [this.master.current, this.master.previous].find((k) => k?.id === r.masterKeyId);
    if (!m) {
      throw new Error(
        `the data key of ${r.subject} is wrapped by master key ${r.masterKeyId}, which is neither MASTER_KEY nor MASTER_KEY_PREVIOUS`,
      );
    }
    return open(m.key, r.wrapped as string, aad(r.subject));
  }
}
