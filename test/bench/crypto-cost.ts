/**
 * What sealing costs (docs/BENCHMARKS.md, "Personal data sealed"): the appends of a sign-up and a
 * replay of the log, through the plain SQLite store and through the sealing wrapper, side by side in
 * alternating rounds on one machine. The password hash (scrypt, ~50 ms) is left out: it is the same
 * both ways and would hide the difference.
 *   npx tsx test/bench/crypto-cost.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { openEventStore, openProtectedStore } from '../../src/init';
import type { EventStore } from '../../src/platform/eventstore/port';

const SIGNUPS = Number(process.env.SIGNUPS ?? 200);
const FILLER = Number(process.env.FILLER ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);

async function signUps(store: EventStore): Promise<number> {
  const t = process.hrtime.bigint();
  for (let i = 0; i < SIGNUPS; i++) {
    const userId = randomUUID();
    const email = `u${randomBytes(6).toString('hex')}@example.com`;
    await store.append(`email-${randomBytes(32).toString('hex')}`, [{ id: randomUUID(), type: 'EmailClaimed', data: { email, userId } }], {
      expectedRevision: 'no_stream',
    });
    await store.append(
      `user-${userId}`,
      [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email, name: 'Bench Person', passwordHash: 'scrypt$16384$8$1$x$y' } }],
      {
        expectedRevision: 'no_stream',
      },
    );
  }
  return Number(process.hrtime.bigint() - t) / 1e6 / SIGNUPS;
}

async function filler(store: EventStore): Promise<void> {
  for (let i = 0; i < FILLER; i += 500) {
    const events = Array.from({ length: 500 }, () => ({
      id: randomUUID(),
      type: 'InferenceCompleted',
      data: { requestId: randomUUID(), outputTokens: 12 },
    }));
    await store.append(`inference-${randomUUID()}`, events, { expectedRevision: 'no_stream' });
  }
}

async function replay(store: EventStore): Promise<number> {
  const t = process.hrtime.bigint();
  let from = 0n;
  let n = 0;
  for (;;) {
    const batch = await store.readAll({ fromPosition: from, maxCount: 500, decode: new Set(['UserRegistered', 'EmailClaimed']) });
    for (const e of batch) if (e.type === 'UserRegistered') n += (e.data as { email: string }).email.length > 0 ? 1 : 0;
    if (batch.length < 500) break;
    from = batch[batch.length - 1].position + 1n;
  }
  // The count keeps the decryption from being skipped, and proves the replay read the sign-ups.
  if (n === 0) throw new Error('the replay read no sign-up');
  return Number(process.hrtime.bigint() - t) / 1e6;
}

async function main() {
  const rows: { round: number; plainSignupMs: number; sealedSignupMs: number; plainReplayMs: number; sealedReplayMs: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const dirs = [mkdtempSync(join(tmpdir(), 'tg-crypto-a-')), mkdtempSync(join(tmpdir(), 'tg-crypto-b-'))];
    const plain = openEventStore({ EVENT_STORE: 'sqlite', DATA_DIR: dirs[0] });
    const sealed = openProtectedStore({ EVENT_STORE: 'sqlite', DATA_DIR: dirs[1] }, () => undefined).store;
    // Alternate which goes first, so neither always meets a warmer machine.
    const order: [EventStore, EventStore] = round % 2 ? [sealed, plain] : [plain, sealed];
    const s: Map<EventStore, number> = new Map();
    for (const st of order) s.set(st, await signUps(st));
    for (const st of order) await filler(st);
    const r: Map<EventStore, number> = new Map();
    for (const st of order) r.set(st, await replay(st));
    rows.push({
      round,
      plainSignupMs: s.get(plain)!,
      sealedSignupMs: s.get(sealed)!,
      plainReplayMs: r.get(plain)!,
      sealedReplayMs: r.get(sealed)!,
    });
    await plain.close();
    await sealed.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const row of rows) console.log(JSON.stringify(row));
  const ps = med(rows.map((r) => r.plainSignupMs));
  const ss = med(rows.map((r) => r.sealedSignupMs));
  const pr = med(rows.map((r) => r.plainReplayMs));
  const sr = med(rows.map((r) => r.sealedReplayMs));
  console.log(`sign-up appends: plain ${ps.toFixed(2)} ms, sealed ${ss.toFixed(2)} ms, ratio ${(ss / ps).toFixed(2)}`);
  console.log(
    `replay of ${SIGNUPS * 4 + FILLER} events: plain ${pr.toFixed(0)} ms, sealed ${sr.toFixed(0)} ms, ratio ${(sr / pr).toFixed(2)}`,
  );
}

void main();
