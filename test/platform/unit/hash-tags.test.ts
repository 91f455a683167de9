import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ChainableCommander } from 'ioredis';
import { keyIndexParts, KEY_INDEX } from '../../../src/accounts/projections/key-index/layout';
import { balancesProjection, reservationKeys } from '../../../src/billing';
import { rateCounterKey } from '../../../src/inference/routes/rate-limit';
import type { RecordedEvent } from '../../../src/platform/eventstore/port';
import { makeTx } from '../../../src/platform/projections/apply-batch';
import { BatchWrites } from '../../../src/platform/projections/batch-writes';
import { Keyspace, wsTag } from '../../../src/platform/projections/keyspace';
import { partitionKeyspaces } from '../../../src/platform/projections/partitions';
import { bullPrefix } from '../../../src/platform/bullmq';
import type { Projection } from '../../../src/platform/projections/projection';

// The CRC16 slot Redis Cluster computes (ioredis's own dependency): only the hash tag is hashed.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const slotOf = require('cluster-key-slot') as (key: string) => number;

/**
 * The hash-tag layout (src/platform/projections/keyspace.ts): every key built for one workspace's
 * request or projection batch is in one Redis Cluster slot, a projection's own keys in another, and
 * no Lua script builds a key name from its arguments (a key it is not given: on a cluster it may
 * be on another slot). The scripts run on a real cluster in the integration tests (describe.each
 * over REDIS_TARGETS), where a key outside the slot fails.
 */

const ks = new Keyspace('tg:');
const slots = (keys: Iterable<string>) => new Set([...keys].map(slotOf));

/** Every key a projection's apply names for `events`: its MULTI commands' keys, batched writes, and script calls' keys and key prefixes. */
function keysWritten(projection: Projection, gen: string, events: RecordedEvent[]): string[] {
  const keys: string[] = [];
  const multi = new Proxy({} as ChainableCommander, {
    get: (_, cmd: string) =>
      cmd === 'eval'
        ? (_lua: string, n: number, ...rest: string[]) => keys.push(...rest.slice(0, n))
        : (...args: unknown[]) => {
            keys.push(...args.filter((a): a is string => typeof a === 'string' && a.startsWith('tg:')));
            return multi;
          },
  });
  const batch = new BatchWrites();
  const tx = makeTx(ks, projection.name, gen, multi, true, batch);
  const recording = {
    ...tx,
    hincrby: (key: string, field: string, delta: string | number | bigint) => (keys.push(key), tx.hincrby(key, field, delta)),
    expireAt: (key: string, at: number) => (keys.push(key), tx.expireAt(key, at)),
    evalEach: (lua: string, k: readonly string[], args: readonly string[]) => keys.push(...k, ...args.filter((a) => a.startsWith('tg:'))),
  };
  for (const e of events) projection.apply(e, recording);
  return keys;
}

const event = (type: string, data: Record<string, unknown>, position = 1n): RecordedEvent =>
  ({
    id: `e${position}`,
    type,
    data,
    position,
    stream: 's',
    revision: 0n,
    created: '2026-11-28T12:00:00.000Z',
    metadata: {},
  }) as unknown as RecordedEvent;

test("every key the balances projection writes for one workspace's events is in that workspace's slot", () => {
  const ws = 'w-7f3a';
  const data = { workspaceId: ws, keyId: 'k1', userId: 'u1', createdBy: 'u1', amountNanoUsd: '5', requestId: 'r1' };
  const events = [
    event('ApiKeyCreated', data),
    event('ApiKeyBudgetChanged', { ...data, monthlyBudgetNanoUsd: '100' }),
    event('ApiKeyBudgetChangedV2', { ...data, budgetNanoUsd: '100', period: 'daily' }),
    event('MemberBudgetChanged', { ...data, budgetNanoUsd: '100', period: 'weekly' }),
    event('DepositSucceeded', data),
    event('AutoReloadSucceeded', data),
    event('TokensDebited', data),
  ];
  const keys = keysWritten(balancesProjection as Projection, '3', events);
  expect(keys.length).toBeGreaterThan(10);
  expect(keys.every((k) => k.includes(wsTag(ws)))).toBe(true);
  expect(slots(keys)).toEqual(slots([`x${wsTag(ws)}`]));
});

test("a request's keys (rate-limit counter, balance, budgets, reservations) are in its workspace's slot", () => {
  const ws = 'w-19';
  const r = reservationKeys((...p) => ks.shared(...p), ws);
  const keys = [
    rateCounterKey(ks.shared('rl', 'inference'), ws, 'k1'),
    ks.rmWs('balances', '4', ws),
    ks.rmWs('balances', '4', ws, 'key-budget', 'k1'),
    ks.rmWs('balances', '4', ws, 'member-spend', 'u1'),
    ...Object.values(r),
  ];
  expect(slots(keys).size).toBe(1);
  // Another workspace: (almost surely) another slot; the tag, not the prefix, decides.
  expect(slots([...keys, ks.rmWs('balances', '4', 'w-20')]).size).toBe(2);
});

test("a projection's own keys (pointers, checkpoints of every partition, ready markers, keys not per workspace) share its home tag", () => {
  const name = 'balances';
  const own = [ks.active(name), ks.genCounter(name), ks.ready(name), ks.rebuildLock(name), ks.pending(name), ks.building(name)];
  for (const pks of partitionKeyspaces('tg:', 4)) own.push(pks.checkpoint(name, '3'), pks.ready(name));
  own.push(ks.rm(name, '3', 'inflight'));
  expect(slots(own).size).toBe(1);
  const index = [
    ks.active(KEY_INDEX),
    ks.rm(KEY_INDEX, '2', ...keyIndexParts.record('ab12')),
    ks.rm(KEY_INDEX, '2', ...keyIndexParts.secrets('k1')),
  ];
  expect(slots(index).size).toBe(1);
});

const SRC = join(__dirname, '..', '..', '..', 'src');
function* luaUnder(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) yield* luaUnder(join(dir, e.name));
    else if (e.name.endsWith('.lua')) yield join(dir, e.name);
  }
}

/**
 * The key each `redis.call`/`pcall` names, where it is built in the script: concatenated (`..`),
 * read from ARGV, or a local assigned from a concatenation. What a script is given in KEYS (its
 * prologue's names) passes.
 */
function builtKeys(lua: string): string[] {
  const code = lua.replace(/--.*$/gm, '');
  const concatenated = new Set(
    [...code.matchAll(/(?:local\s+)?(\w+)\s*=\s*([^\n]*)/g)].filter((m) => m[2].includes('..')).map((m) => m[1]),
  );
  const found: string[] = [];
  for (const m of code.matchAll(/redis\.p?call\(\s*'(\w+)'\s*,\s*([^,)]*(?:\([^)]*\))?[^,)]*)/g)) {
    const [, cmd, arg] = [m[0], m[1], m[2].trim()];
    if (/^S?PUBLISH$/i.test(cmd)) continue;
    if (arg.includes('..') || arg.includes('ARGV') || concatenated.has(arg)) found.push(`${cmd} ${arg}`);
  }
  if (/redis\.p?call\(\s*unpack/.test(code)) found.push('a command unpacked from ARGV');
  return found;
}

/**
 * Scripts that still build key names, each in one slot so far (its keys share a tag, so the
 * cluster runs them), listed here until they are given their keys: the list only shrinks.
 */
const STILL_BUILDS_KEYS: Record<string, string> = {
  'billing/projections/balances/reserve.inc.lua': 'budgets, spend and the key owner under the workspace key, by key id and owner',
  'platform/projections/guard.lua': "the projector's batch guard: pointers and checkpoints of every projection, in ARGV",
  'platform/projections/advance.lua': "the projector's checkpoint move: pointers and checkpoints in ARGV",
  'platform/projections/mark-ready.lua': 'ready markers, pointers and checkpoints in ARGV',
  'platform/projections/expireat-many.lua': "a batch's EXPIREATs, keys in ARGV",
  'platform/projections/read-in-generation.lua': "a read model's reads, commands in ARGV",
  'accounts/projections/key-index/set-on-rolled.lua': "a rolled key's records by the hashes in its set (all under the key index's tag)",
  'accounts/projections/key-index/delete-rolled.lua': "a rolled key's records by the hashes in its set (all under the key index's tag)",
  'accounts/projections/invitations/settle.lua': 'the invitation index by e-mail',
};

test('no Lua script builds a key name from its arguments, beyond the shrinking list of those that still do', () => {
  const builders: Record<string, string[]> = {};
  for (const file of luaUnder(SRC)) {
    const found = builtKeys(readFileSync(file, 'utf8'));
    if (found.length) builders[relative(SRC, file)] = found;
  }
  expect(Object.keys(builders).filter((f) => !(f in STILL_BUILDS_KEYS))).toEqual([]);
  // A script taken off the list must not be on it any more.
  expect(Object.keys(STILL_BUILDS_KEYS).filter((f) => !(f in builders))).toEqual([]);
});

test('the check sees a key built from arguments', () => {
  expect(builtKeys("local k = prefix .. id\nredis.call('GET', k)")).toEqual(['GET k']);
  expect(builtKeys("redis.call('HGET', base .. ':x', 'f')")).toEqual(["HGET base .. ':x'"]);
  expect(builtKeys("redis.call('SET', ARGV[1], 'v')")).toEqual(['SET ARGV[1]']);
  expect(builtKeys("redis.call('GET', counter)\nredis.call('PUBLISH', ch .. 'x', 'm')")).toEqual([]);
});

test("on a Redis Cluster each BullMQ queue's keys share a tag of the queue's own; on one Redis the prefix stays as it was", () => {
  const cluster = { REDIS_PREFIX: 'tg:', REDIS_CLUSTER_NODES: ['10.0.0.5:7001'] };
  const keysOf = (queue: string) => ['wait', 'active', 'meta', 'events', '123'].map((k) => `${bullPrefix(cluster, queue)}:${queue}:${k}`);
  expect(slots(keysOf('auto-reload')).size).toBe(1);
  expect(slots([...keysOf('auto-reload'), ...keysOf('webhook-delivery')]).size).toBe(2);
  expect(bullPrefix({ REDIS_PREFIX: 'tg:' }, 'auto-reload')).toBe('tg:bull');
});
