import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Reactor } from '../../../src/platform/projections/projection';
import { readYourWrites } from '../../../src/platform/projections/read-your-writes';
import { fxLedger, fxModule } from '../../support/fixtures/projections';
import { startTestServer, TestServer } from '../../support/harness';
import { uniquePrefix } from '../../support/redis';
import { patience, until } from '../../support/wait';

/**
 * readYourWrites waits for the read models the next request reads, and for nothing else, in every
 * role: here a reactor that goes on only once the answer came. An answer that waited for the
 * reactors too (role all did, split roles did not) would wait for itself until
 * READ_YOUR_WRITES_TIMEOUT_MS and then say so in a warning.
 */
const ROLES: Array<[string, Array<Record<string, string>>]> = [
  ['all', [{ ROLE: 'all' }]],
  ['all with 2 partitions', [{ ROLE: 'all', PROJECTION_PARTITIONS: '2' }]],
  ['api beside a projector', [{ ROLE: 'projector' }, { ROLE: 'api' }]],
];

let servers: TestServer[] = [];
let dataDir: string | undefined;
afterEach(async () => {
  for (const s of servers.reverse()) await s.close();
  servers = [];
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

test.each(ROLES)('in role %s, an answer waits for the projections and not for the reactors', async (_role, roles) => {
  const account = `ryw-${randomUUID()}`;
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  let reacted = false;
  const waitsForTheAnswer: Reactor = {
    name: 'waits-for-the-answer',
    handles: new Set(['FxCredited']),
    async react(e) {
      if ((e.data as { account: string }).account !== account) return;
      await answered;
      reacted = true;
    },
  };
  const ledger = fxLedger('ryw-ledger');
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-ryw-roles-'));
  const shared = { DATA_DIR: dataDir, REDIS_PREFIX: uniquePrefix('ryw-roles'), READ_YOUR_WRITES_TIMEOUT_MS: String(patience(5_000)) };
  for (const role of roles)
    servers.push(await startTestServer({ ...shared, ...role }, { modules: [fxModule([ledger], [waitsForTheAnswer])] }));
  const api = servers[servers.length - 1].services;

  const warn = jest.spyOn(api.log, 'warn');
  const appended = await api.store.append('fx-ryw', [{ id: randomUUID(), type: 'FxCredited', data: { account, amount: '5' } }], {
    expectedRevision: 'any',
  });
  await readYourWrites(api, appended);
  answer();

  expect(warn).not.toHaveBeenCalled();
  // The next request reads the read model: the write is in it.
  const balance = await api.redis.hget((await api.readModels.keys(ledger.name))('balance'), account);
  expect(balance).toBe('5');
  // The reactor still runs, after the answer.
  await until(() => reacted, 15_000, 'the reactor');
});
