import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { program } from '../../../src/cli';
import { signReceipt, verifyReceipt } from '../../../src/inference/receipt-signature';
import { resolveSigningKeys, signingKeyOfSeed } from '../../../src/platform/crypto/signing-key';
import { startTestServer, TestServer } from '../../support/harness';
import { api, fund, newUser, TestUser } from '../../accounts/e2e/helpers';

/**
 * Signed receipts: Ed25519 over the canonical form, the JWKS route, rotation, the docs' snippet and
 * `tollgate receipts verify` offline, and the monthly statement's digest over the month's receipts.
 */

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../../..');
const SEED_A = Buffer.alloc(32, 1).toString('base64');
const SEED_B = Buffer.alloc(32, 2).toString('base64');
const keyA = signingKeyOfSeed(Buffer.alloc(32, 1));

const dir = mkdtempSync(join(tmpdir(), 'tollgate-receipts-'));
let server: TestServer;
let owner: TestUser;
let secret: string;
beforeAll(async () => {
  server = await startTestServer({ RECEIPT_SIGNING_KEY: SEED_A });
  owner = await newUser(server, 'signed');
  await fund(server, owner.personalWs);
  const created = await api(server)
    .post(`/v1/workspaces/${owner.personalWs}/keys`)
    .set(owner.auth)
    .set('X-Requested-With', 'test')
    .send({ name: 'signed' });
  secret = created.body.secret as string;
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function receiptOfNewCall(s: TestServer = server) {
  const res = await api(s)
    .post('/external/api/inference')
    .set('Authorization', `Bearer ${secret}`)
    .send({ context: [{ type: 'Human', text: 'Sign this' }], config: 'service_3_pi', max_tokens: 12 });
  expect(res.status).toBe(200);
  const r = await api(s).get(`/external/api/inference/requests/${res.headers['x-request-id']}`).set('Authorization', `Bearer ${secret}`);
  expect(r.status).toBe(200);
  return r.body;
}

const saved = (name: string, value: unknown) => {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
};

test('a receipt is signed by the key the JWKS publishes, and any altered field breaks it', async () => {
  const receipt = await receiptOfNewCall();
  const jwks = await api(server).get('/.well-known/jwks.json');
  expect(jwks.status).toBe(200);
  expect(jwks.body.keys).toEqual([keyA.jwk]);
  expect((await api(server).post('/.well-known/jwks.json')).status).toBe(405);
  expect(receipt.signature).toEqual({ alg: 'EdDSA', kid: keyA.kid, value: expect.stringMatching(/^[A-Za-z0-9_-]{86}$/) });
  expect(verifyReceipt(receipt, jwks.body)).toEqual({ ok: true, kid: keyA.kid });
  // The member's route serves the same signed receipt.
  const member = await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${receipt.requestId}`).set(owner.auth);
  expect(member.body.signature).toEqual(receipt.signature);
  for (const altered of [
    { ...receipt, cost: '0' },
    { ...receipt, outputTokens: receipt.outputTokens + 1 },
    { ...receipt, key: { ...receipt.key, keyId: 'another' } },
    { ...receipt, debit: { ...receipt.debit, position: '1' } },
    { ...receipt, prices: { ...receipt.prices, outputUsdPerToken: '0.000001' } },
    { ...receipt, requestedAt: '2020-01-01T00:00:00.000Z' },
  ])
    expect(verifyReceipt(altered, jwks.body)).toMatchObject({ ok: false });
});

test('the docs’ node:crypto snippet verifies a receipt as written, and refuses an altered one', async () => {
  const docs = readFileSync(join(ROOT, 'docs/INFERENCE.md'), 'utf8');
  const block = /<!-- verify-receipt\.mjs[^>]*-->\n```js\n([\s\S]*?)```/.exec(docs)?.[1];
  expect(block).toBeDefined();
  expect(block!.trimEnd().split('\n').length).toBeLessThanOrEqual(20);
  const script = join(dir, 'verify-receipt.mjs');
  writeFileSync(script, block!);
  const receipt = await receiptOfNewCall();
  const jwks = saved('jwks.json', (await api(server).get('/.well-known/jwks.json')).body);
  const good = await run(process.execPath, [script, saved('good.json', receipt), jwks]);
  expect(good.stdout.trim()).toBe(`valid: signed by ${keyA.kid}`);
  const bad = await run(process.execPath, [script, saved('bad.json', { ...receipt, cost: '0.000001' }), jwks]).catch((e) => e);
  expect([bad.code, bad.stdout.trim()]).toEqual([1, 'INVALID']);
});

async function cli(...args: string[]): Promise<{ out: string; code: number }> {
  let out = '';
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  const before = process.exitCode;
  process.exitCode = 0;
  try {
    await program().parseAsync(['node', 'tollgate', ...args]);
    return { out, code: Number(process.exitCode ?? 0) };
  } finally {
    write.mockRestore();
    process.exitCode = before;
  }
}

test('`tollgate receipts verify` checks a saved receipt offline against a saved JWKS', async () => {
  const receipt = await receiptOfNewCall();
  const jwks = saved('jwks-cli.json', (await api(server).get('/.well-known/jwks.json')).body);
  const ok = await cli('receipts', 'verify', saved('cli-good.json', receipt), '--jwks', jwks);
  expect(ok).toEqual({ code: 0, out: `valid: request ${receipt.requestId}, cost ${receipt.cost} USD, signed by key ${keyA.kid}\n` });
  const bad = await cli('receipts', 'verify', saved('cli-bad.json', { ...receipt, inputTokens: 1 }), '--jwks', jwks);
  expect(bad.code).toBe(1);
  expect(bad.out).toMatch(/^INVALID: request .*does not match/);
});

test('the monthly statement carries a digest over the month’s receipts: one missing or altered shows', async () => {
  const receipts = [await receiptOfNewCall(), await receiptOfNewCall()];
  const month = receipts[0].debit.at.slice(0, 7);
  // Every receipt of the month, read back by the requests the statement's ledger lists.
  const ledger = await api(server).get(`/v1/workspaces/${owner.personalWs}/billing/ledger?limit=200`).set(owner.auth);
  expect(ledger.status).toBe(200);
  const st = await api(server).get(`/v1/workspaces/${owner.personalWs}/statements/${month}`).set(owner.auth);
  expect(st.status).toBe(200);
  const ids = (ledger.body.entries as Array<{ type: string; ref: string }>).filter((e) => e.type === 'TokensDebited').map((e) => e.ref);
  expect(ids).toEqual(expect.arrayContaining(receipts.map((r) => r.requestId)));
  const all = await Promise.all(
    ids.map(async (id) => (await api(server).get(`/v1/workspaces/${owner.personalWs}/requests/${id}`).set(owner.auth)).body),
  );
  const digest = (rs: typeof all) =>
    createHash('sha256')
      .update(
        rs
          .filter((r) => r.debit.at.startsWith(month))
          .sort((a, b) => (BigInt(a.debit.position) < BigInt(b.debit.position) ? -1 : 1))
          .map((r) => [r.debit.position, r.requestId, r.key.keyId, r.inputTokens, r.outputTokens, r.cost].join('\t') + '\n')
          .join(''),
      )
      .digest('hex');
  expect(st.body.receipts).toEqual({ algorithm: 'sha256', count: all.length, value: digest(all) });
  expect(digest(all.slice(1))).not.toBe(st.body.receipts.value);
  expect(digest([{ ...all[0], cost: '0' }, ...all.slice(1)])).not.toBe(st.body.receipts.value);
});

test('`tollgate receipts rotate-key` (the generated key file): the old key stays published, so `verify` without --jwks still passes', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-rotate-'));
  const env = { DATA_DIR: process.env.DATA_DIR, RECEIPT_SIGNING_KEY: process.env.RECEIPT_SIGNING_KEY };
  process.env.DATA_DIR = dataDir;
  delete process.env.RECEIPT_SIGNING_KEY;
  try {
    const generated = resolveSigningKeys({ DATA_DIR: dataDir }, () => undefined)!;
    const { signature: _, ...bare } = await receiptOfNewCall();
    const file = saved('host-signed.json', { ...bare, signature: signReceipt(bare, generated.current) });
    expect(await cli('receipts', 'verify', file)).toMatchObject({
      code: 0,
      out: expect.stringContaining(`signed by key ${generated.current.kid}`),
    });
    const rotated = await cli('receipts', 'rotate-key');
    expect(rotated.out).toMatch(new RegExp(`^new signing key \\S+; ${generated.current.kid} retired`));
    const now = resolveSigningKeys({ DATA_DIR: dataDir }, () => undefined)!;
    expect(now.current.kid).not.toBe(generated.current.kid);
    expect(now.retired.map((k) => k.kid)).toEqual([generated.current.kid]);
    expect(await cli('receipts', 'verify', file)).toMatchObject({ code: 0 });
  } finally {
    for (const [k, v] of Object.entries(env))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    rmSync(dataDir, { recursive: true, force: true });
  }
});

// Last: closing the second server clears the Redis prefix the two share.
test('after a rotation the new key signs, and a receipt signed before still verifies with the published old key', async () => {
  const before = await receiptOfNewCall();
  const rotated = await startTestServer({
    RECEIPT_SIGNING_KEY: SEED_B,
    RECEIPT_SIGNING_KEYS_RETIRED: keyA.jwk.x,
    REDIS_PREFIX: server.prefix,
    DATA_DIR: server.dataDir,
    ROLE: 'api',
  });
  try {
    const jwks = (await api(rotated).get('/.well-known/jwks.json')).body;
    const keyB = signingKeyOfSeed(Buffer.alloc(32, 2));
    expect(jwks.keys.map((k: { kid: string }) => k.kid)).toEqual([keyB.kid, keyA.kid]);
    expect(verifyReceipt(before, jwks)).toEqual({ ok: true, kid: keyA.kid });
    const after = await api(rotated).get(`/external/api/inference/requests/${before.requestId}`).set('Authorization', `Bearer ${secret}`);
    expect(after.body.signature.kid).toBe(keyB.kid);
    expect(verifyReceipt(after.body, jwks)).toEqual({ ok: true, kid: keyB.kid });
    // Without the retired key published, the old signature does not verify: the retired list is what keeps it.
    expect(verifyReceipt(before, { keys: [jwks.keys[0]] })).toMatchObject({ ok: false });
  } finally {
    await rotated.close();
  }
});
