import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { ConfigError, loadConfig } from '../../../src/platform/config';
import { deriveKey, keyId } from '../../../src/platform/crypto/aead';
import { lookupHasher } from '../../../src/platform/crypto/lookup-key';
import { SubjectErased, WrappedKeyStore, type KeyRows } from '../../../src/platform/crypto/key-store';
import { resolveMasterKeys, type MasterKey } from '../../../src/platform/crypto/master-key';
import { PostgresKeyRows } from '../../../src/platform/crypto/postgres-key-rows';
import { ERASED, ProtectedStore } from '../../../src/platform/crypto/protected-store';
import { SqliteKeyRows } from '../../../src/platform/crypto/sqlite-key-rows';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../../support/postgres';

const master = (): MasterKey => {
  const key = randomBytes(32);
  return { id: keyId(key), key };
};

const dir = mkdtempSync(join(tmpdir(), 'tollgate-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let pg: TestDatabase | undefined;
beforeAll(async () => {
  if (TEST_DATABASE_URL) pg = await createTestDatabase('keys');
});
afterAll(() => pg?.drop());

const adapters: [string, () => KeyRows][] = [
  ['sqlite', () => new SqliteKeyRows(join(dir, `${randomUUID()}.sqlite`))],
  ['postgres', () => new PostgresKeyRows(pg!.url)],
];

describe.each(adapters)('the data-key store on %s', (name, rows) => {
  const skip = name === 'postgres' && !TEST_DATABASE_URL;
  (skip ? test.skip : test)('keys are made once, destroyed for good, and re-wrapped by a master-key rotation', async () => {
    const r = rows();
    const old = master();
    const subject = `user:${randomUUID()}`;
    const store = new WrappedKeyStore(r, { current: old, source: 'MASTER_KEY' });
    const key = await store.getOrCreate(subject);
    expect(await store.getOrCreate(subject)).toEqual(key);

    // Rotation: the new master alone cannot unwrap the old wraps; with the old one as previous, rewrapAll moves them.
    const next = master();
    await expect(new WrappedKeyStore(r, { current: next, source: 'MASTER_KEY' }).get([subject])).rejects.toThrow(
      /neither MASTER_KEY nor MASTER_KEY_PREVIOUS/,
    );
    const rotating = new WrappedKeyStore(r, { current: next, previous: old, source: 'MASTER_KEY' });
    expect(await rotating.rewrapAll()).toBeGreaterThanOrEqual(1);
    expect(await rotating.rewrapAll()).toBe(0);
    const after = new WrappedKeyStore(r, { current: next, source: 'MASTER_KEY' });
    expect((await after.get([subject])).get(subject)).toEqual(key);

    // Another store's master key is refused at start, naming the setting; while rotating, the previous one opens it.
    await expect(new WrappedKeyStore(r, { current: master(), source: 'MASTER_KEY' }).checkMasterKey()).rejects.toThrow(
      /^invalid setting MASTER_KEY: MASTER_KEY is not the master key of this store's data keys/,
    );
    await expect(
      new WrappedKeyStore(r, { current: master(), previous: next, source: 'MASTER_KEY' }).checkMasterKey(),
    ).resolves.toBeUndefined();

    expect(await after.destroy(subject)).toBe(true);
    expect(await after.destroy(subject)).toBe(false);
    expect((await after.get([subject])).get(subject)).toBeNull();
    await expect(after.getOrCreate(subject)).rejects.toBeInstanceOf(SubjectErased);
    await after.close();
  });

  (skip ? test.skip : test)(
    'the lookup hash outlives a master-key rotation, and starts as the release that sealed first made it',
    async () => {
      const r = rows();
      const old = master();
      const before = await lookupHasher(new WrappedKeyStore(r, { current: old, source: 'MASTER_KEY' }), {
        current: old,
        source: 'MASTER_KEY',
      });
      // The claim streams a store written before this key was kept are named with HMAC(deriveKey(master, 'lookup')).
      expect(before('email:a@example.com')).toBe(
        createHmac('sha256', deriveKey(old.key, 'lookup')).update('email:a@example.com').digest('hex'),
      );
      const next = master();
      const rotating = new WrappedKeyStore(r, { current: next, previous: old, source: 'MASTER_KEY' });
      expect(await rotating.rewrapAll()).toBeGreaterThanOrEqual(1);
      const after = new WrappedKeyStore(r, { current: next, source: 'MASTER_KEY' });
      expect((await lookupHasher(after, { current: next, source: 'MASTER_KEY' }))('email:a@example.com')).toBe(
        before('email:a@example.com'),
      );
      await after.close();
    },
  );
});

test('the protected store seals on append, opens on read, and an erased subject reads as erased; other events pass untouched', async () => {
  const file = join(dir, 'events.sqlite');
  const keys = new WrappedKeyStore(new SqliteKeyRows(file), { current: master(), source: 'MASTER_KEY' });
  const store = new ProtectedStore(new SqliteEventStore({ file }), keys, [
    { type: 'Said', storedAs: 'SaidV2', subject: (d) => `user:${String(d.userId)}`, fields: ['words'] },
  ]);
  const userId = randomUUID();
  await store.append(
    's-1',
    [
      { id: randomUUID(), type: 'Said', data: { userId, words: 'a very secret sentence' } },
      { id: randomUUID(), type: 'Other', data: { n: 1 } },
    ],
    {
      expectedRevision: 'no_stream',
    },
  );
  const read = await store.readStream('s-1');
  expect(read.map((e) => [e.type, e.data])).toEqual([
    ['Said', { userId, words: 'a very secret sentence' }],
    ['Other', { n: 1 }],
  ]);
  expect(readFileSync(file).toString('latin1') + readFileSync(`${file}-wal`).toString('latin1')).not.toContain('a very secret sentence');
  // A reader that does not decode the type (a projector) gets it as released, opened when its data is read;
  // a subscription opens it too.
  const [lazy] = await store.readAll({ decode: new Set(['Other']) });
  expect(lazy.type).toBe('Said');
  expect(lazy.data).toEqual({ userId, words: 'a very secret sentence' });
  const sub = store.subscribeToAll({ decode: new Set(['Said']) });
  for await (const e of sub) {
    expect([e.type, e.data]).toEqual(['Said', { userId, words: 'a very secret sentence' }]);
    break;
  }
  await sub.close();
  await keys.destroy(`user:${userId}`);
  expect((await store.readAll())[0].data).toEqual({ userId, words: ERASED });
  expect((await store.readAll({ decode: new Set(['Other']) }))[0].data).toEqual({ userId, words: ERASED });
  await store.close();
});

describe('the master key at start', () => {
  test('unset: generated once under DATA_DIR, with one line saying so; the same key next time', () => {
    const d = join(dir, randomUUID());
    const lines: string[] = [];
    const first = resolveMasterKeys({ DATA_DIR: d }, (l) => lines.push(l));
    const second = resolveMasterKeys({ DATA_DIR: d }, (l) => lines.push(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^MASTER_KEY is not set: generated a master key in .*master\.key/);
    expect(second.current.id).toBe(first.current.id);
  });

  test('a MASTER_KEY that is not 32 bytes of base64: one line naming the setting, never the value', () => {
    for (const bad of ['short', randomBytes(16).toString('base64'), '!'.repeat(44)]) {
      let err: unknown;
      try {
        loadConfig({ MASTER_KEY: bad }, {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).lines).toEqual([expect.stringMatching(/^invalid setting MASTER_KEY: must be 32 bytes in base64/)]);
      expect((err as ConfigError).message).not.toContain(bad);
    }
    expect(loadConfig({ MASTER_KEY: randomBytes(32).toString('base64') }, {}).MASTER_KEY).toBeDefined();
  });
});
