import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPlaintextRows, openProtectedStore, type KeyStoreConfig } from '../../../src/init';
import { lookupHasher } from '../../../src/platform/crypto/lookup-key';
import { sealPlaintext } from '../../../src/platform/crypto/seal-plaintext';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../../support/postgres';

/**
 * The in-place seal (src/platform/crypto/seal-plaintext.ts) stopped after its first batch, as a crash
 * would stop it: the log reads exactly as before at every point, and the next run finishes the job.
 */
const dir = mkdtempSync(join(tmpdir(), 'tollgate-seal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let pg: TestDatabase | undefined;
afterAll(() => pg?.drop());

const stores: [string, () => Promise<KeyStoreConfig>][] = [
  ['sqlite', async () => ({ EVENT_STORE: 'sqlite', DATA_DIR: join(dir, randomUUID()), MASTER_KEY: randomBytes(32).toString('base64') })],
  [
    'postgres',
    async () => {
      pg ??= await createTestDatabase('seal');
      return { EVENT_STORE: 'postgres', DATABASE_URL: pg.url, DATA_DIR: dir, MASTER_KEY: randomBytes(32).toString('base64') };
    },
  ],
];

describe.each(stores)('sealing plain-text events on %s', (name, configOf) => {
  (name === 'postgres' && !TEST_DATABASE_URL ? test.skip : test)(
    'a run stopped after one batch leaves a log that reads the same; the next run finishes it',
    async () => {
      const config = await configOf();
      const { store, master } = openProtectedStore(config, () => undefined);
      const raw = store.inner;
      const users = Array.from({ length: 3 }, () => ({ userId: randomUUID(), email: `seal-${randomUUID()}@example.com` }));
      for (const u of users) {
        const legacy = `email-${createHash('sha256').update(u.email).digest('hex')}`;
        await raw.append(legacy, [{ id: randomUUID(), type: 'EmailClaimed', data: { email: u.email, userId: u.userId } }], {
          expectedRevision: 'no_stream',
        });
        await raw.append(
          `user-${u.userId}`,
          [
            {
              id: randomUUID(),
              type: 'UserRegistered',
              data: { userId: u.userId, email: u.email, name: 'Seal Person', passwordHash: 'h' },
            },
          ],
          { expectedRevision: 'no_stream' },
        );
        // An event of another type between them: untouched.
        await raw.append(`other-${randomUUID()}`, [{ id: randomUUID(), type: 'SomethingHappened', data: { email: u.email } }], {
          expectedRevision: 'no_stream',
        });
      }
      // The second user was erased before the migration: his fields are sealed as erased (null).
      await store.keys.destroy(`user:${users[1].userId}`);
      const readable = async () =>
        (await store.readAll())
          .filter((e) => e.type !== 'SomethingHappened')
          .map((e) => ({ position: e.position, type: e.type, data: e.data }));
      const before = await readable();
      const lookupHash = await lookupHasher(store.keys, master);
      const rows = openPlaintextRows(config);
      try {
        const crash = new Error('stopped');
        await expect(
          sealPlaintext({
            rows,
            sealer: store,
            lookupHash,
            batchSize: 2,
            progress: () => {
              throw crash;
            },
          }),
        ).rejects.toBe(crash);
        const half = (await raw.readAll()).map((e) => e.type);
        expect(half.filter((t) => t.endsWith('V2'))).toHaveLength(2);
        expect(await readable()).toEqual(before);

        const done = await sealPlaintext({ rows, sealer: store, lookupHash, batchSize: 2 });
        expect(done).toEqual({ sealed: 4, total: 4, renamed: 2 });
        expect(await sealPlaintext({ rows, sealer: store, lookupHash })).toEqual({ sealed: 0, total: 0, renamed: 0 });
        const stored = await raw.readAll();
        expect(stored.filter((e) => e.type === 'SomethingHappened')).toHaveLength(3);
        expect(stored.map((e) => e.type).filter((t) => t === 'EmailClaimed' || t === 'UserRegistered')).toEqual([]);
        expect(JSON.stringify(stored.filter((e) => e.type !== 'SomethingHappened').map((e) => [e.stream, e.data]))).not.toMatch(
          /seal-|Seal Person/,
        );
        // Positions, revisions and ids stay; the claim streams have their keyed names.
        expect(await readable()).toEqual(before);
        for (const u of users) {
          const claim = await store.readStream(`email-${lookupHash(`email:${u.email}`)}`);
          expect(claim.map((e) => e.data)).toEqual([{ userId: u.userId, email: u === users[1] ? '[erased]' : u.email }]);
        }
        await rows.compact();
      } finally {
        await rows.close();
        await store.close();
      }
    },
  );
});

test('EventStoreDB cannot rewrite an event: the command says so in one line', () => {
  expect(() =>
    openPlaintextRows({ EVENT_STORE: 'esdb', DATA_DIR: dir, EVENTSTORE_CONNECTION_STRING: 'esdb://127.0.0.1:2113?tls=false' }),
  ).toThrow(/^EVENT_STORE=esdb: EventStoreDB cannot rewrite an event in place/);
});
