import type { ProtectedStore } from './protected-store';

/** One stored event as the file or table holds it (no decryption, no decoding of the other types). */
export interface StoredRow {
  position: bigint;
  stream: string;
  type: string;
  data: Record<string, unknown>;
}

/**
 * The rows of an event store, for the one rewrite an immutable log allows itself: sealing, in place,
 * the personal fields and secrets a release before encryption wrote in plain text. Adapters:
 * ./sqlite-plaintext-rows.ts, ./postgres-plaintext-rows.ts (EventStoreDB cannot rewrite an event).
 */
export interface PlaintextRows {
  /** Where the rows are, for messages: the SQLite file or the PostgreSQL table. */
  readonly where: string;
  count(types: readonly string[]): Promise<number>;
  /** Up to `limit` rows of these types after `after`, by position. */
  scan(types: readonly string[], after: bigint, limit: number): Promise<StoredRow[]>;
  streamExists(stream: string): Promise<boolean>;
  /** One transaction: each rename moves every event of a stream (revisions kept), then each row gets its new type and data. */
  rewrite(
    renames: readonly { from: string; to: string }[],
    rows: readonly { position: bigint; type: string; data: string }[],
  ): Promise<void>;
  /** Overwrites the bytes the rewrite left behind (SQLite: VACUUM, then a truncating WAL checkpoint; PostgreSQL: VACUUM FULL). */
  compact(): Promise<void>;
  close(): Promise<void>;
}

export interface SealProgress {
  sealed: number;
  total: number;
  renamed: number;
}

/**
 * `tollgate events seal-plaintext` (docs/SECURITY.md, "Migration of plain-text events"): every event
 * of a protected type still stored as released (plain text) is rewritten in place as its stored
 * version, sealed with its subject's data key (null fields when the subject was erased), so it reads
 * exactly as before through the ProtectedStore. Position, stream revision, id, metadata and time
 * stay: ledgers, checkpoints and projections see the same log. Streams named from a plain field
 * (email-{sha256}) move to their keyed-hash names in the same transaction as their batch.
 *
 * Idempotent and crash-safe: each batch is one transaction, and a run selects only rows still in
 * plain text, so a run stopped anywhere leaves a log that reads the same, and the next run finishes it.
 * Offline: run it with the service stopped (a running writer keeps stream revisions in memory).
 */
export async function sealPlaintext(deps: {
  rows: PlaintextRows;
  sealer: ProtectedStore;
  lookupHash: (value: string) => string;
  batchSize?: number;
  progress?: (p: SealProgress) => void;
}): Promise<SealProgress> {
  const { rows, sealer, lookupHash } = deps;
  const batchSize = deps.batchSize ?? 500;
  const byType = new Map(sealer.protectedTypes.map((p) => [p.type, p]));
  const types = [...byType.keys()];
  const done: SealProgress = { sealed: 0, total: await rows.count(types), renamed: 0 };
  let after = -1n;
  for (;;) {
    const batch = await rows.scan(types, after, batchSize);
    if (batch.length === 0) break;
    const renames: { from: string; to: string }[] = [];
    const updates: { position: bigint; type: string; data: string }[] = [];
    // Sealed before the transaction: a subject's first data key is written by the key store's own connection.
    for (const row of batch) {
      const p = byType.get(row.type)!;
      const sealed = await sealer.seal({ id: '', type: row.type, data: row.data });
      updates.push({ position: row.position, type: sealed.type, data: JSON.stringify(sealed.data) });
      const move = p.renameLegacyStream?.(row.stream, row.data, lookupHash);
      if (!move || renames.some((r) => r.from === row.stream)) continue;
      const to = (await rows.streamExists(move.to)) ? move.taken : move.to;
      if (await rows.streamExists(to)) throw new Error(`cannot move stream ${row.stream}: ${move.to} and ${move.taken} both exist`);
      renames.push({ from: row.stream, to });
    }
    await rows.rewrite(renames, updates);
    done.sealed += updates.length;
    done.renamed += renames.length;
    after = batch[batch.length - 1].position;
    deps.progress?.({ ...done });
  }
  return done;
}
