import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { auditProjection } from '../../../src/accounts/projections/audit/projection';
import { rebuildProjection } from '../../../src/platform/projections/rebuild';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, fund, newUser, TestUser } from './helpers';
import { expectMatchesContract } from '../../support/contract';
import { auditLog } from '../../../src/accounts/routes/audit-schemas';

let server: TestServer;
let ann: TestUser; // admin
let bob: TestUser; // member
let eve: TestUser; // outsider

beforeAll(async () => {
  server = await startTestServer();
  [ann, bob, eve] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob'), newUser(server, 'eve')]);
});
afterAll(() => server?.close());

const audit = (by: TestUser, ws: string, query = '') => api(server).get(`/v1/workspaces/${ws}/audit${query}`).set(by.auth);
type Entry = {
  id: string;
  time: string;
  actor: Record<string, unknown>;
  action: string;
  target: Record<string, unknown> | null;
  outcome: string;
  details: Record<string, unknown>;
};

describe('GET /v1/workspaces/:ws/audit', () => {
  test('every action, newest first: who (user or API key by name and last four), what, on what, outcome, when; never a secret or a hash', async () => {
    const ws = await createWorkspace(server, ann, 'Audited');
    const carl = await newUser(server, 'carl');
    await addMember(server, ann, ws, bob);
    const inv = await api(server).post(`/v1/workspaces/${ws}/invitations`).set(ann.auth).send({ email: carl.email });
    await api(server).delete(`/v1/workspaces/${ws}/invitations/${inv.body.invitationId}`).set(ann.auth).expect(204);
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).set(ann.auth).send({ role: 'admin' }).expect(200);
    await fund(server, ws);
    const key = await api(server).post(`/v1/workspaces/${ws}/keys`).set(bob.auth).send({ name: 'ci key' });
    await api(server)
      .patch(`/v1/workspaces/${ws}/keys/${key.body.keyId}`)
      .set(bob.auth)
      .send({ name: 'ci key 2', monthlyBudget: '25' })
      .expect(200);
    await api(server).delete(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth).expect(204);
    await api(server).post(`/v1/workspaces/${ws}/leave`).set(bob.auth).expect(204);
    // A billing event written by an API key's request would name the key: none does today, so append one.
    const done = await server.services.store.append(
      streams.billing(ws),
      [
        {
          id: randomUUID(),
          type: 'DepositFailed',
          data: {
            workspaceId: ws,
            depositId: 'dep_1',
            amountNanoUsd: '5000000000',
            paymentIntentId: null,
            reason: 'Your card was declined.',
            code: 'card_declined',
            by: 'x',
          },
          metadata: { actor: `apikey:${key.body.keyId}` },
        },
      ],
      { expectedRevision: 'any' },
    );
    await server.services.progress.waitFor(done.position, 5000);

    const res = await audit(ann, ws);
    expect(res.status).toBe(200);
    await expectMatchesContract(res, auditLog);
    const entries = res.body.entries as Entry[];
    expect(res.body.nextCursor).toBeNull();
    expect(entries.map((e) => e.action)).toEqual([
      'billing.deposit',
      'member.left',
      'key.deleted',
      'key.budget_changed',
      'key.renamed',
      'key.created',
      'billing.deposit',
      'billing.payment_method_attached',
      'member.role_changed',
      'invitation.revoked',
      'invitation.sent',
      'member.joined',
      'invitation.accepted',
      'invitation.sent',
      'member.joined',
      'workspace.created',
    ]);
    const times = entries.map((e) => e.time);
    expect([...times].sort().reverse()).toEqual(times);
    const annActor = { type: 'user', userId: ann.userId, name: ann.name, email: ann.email };
    const bobActor = { type: 'user', userId: bob.userId, name: bob.name, email: bob.email };
    const keyTarget = { type: 'apiKey', id: key.body.keyId, name: 'ci key 2', last4: key.body.secret.slice(-4) };
    expect(entries[0]).toEqual({
      id: expect.any(String),
      time: expect.any(String),
      actor: { type: 'apiKey', keyId: key.body.keyId, name: 'ci key 2', last4: key.body.secret.slice(-4) },
      action: 'billing.deposit',
      target: { type: 'deposit', id: 'dep_1' },
      outcome: 'failed',
      details: { amount: '5', reason: 'Your card was declined.', code: 'card_declined' },
    });
    expect(entries[1]).toMatchObject({
      actor: bobActor,
      target: { type: 'member', id: bob.userId, name: bob.name, email: bob.email },
      outcome: 'succeeded',
    });
    expect(entries[2]).toMatchObject({ actor: annActor, target: keyTarget });
    expect(entries[3]).toMatchObject({
      actor: bobActor,
      target: keyTarget,
      details: { budget: '25', period: 'monthly', previousBudget: null, previousPeriod: null },
    });
    expect(entries[4]).toMatchObject({ details: { name: 'ci key 2', previousName: 'ci key' } });
    expect(entries[5]).toMatchObject({ actor: bobActor, details: { name: 'ci key', scopes: ['inference'], expiresAt: null } });
    expect(entries[8]).toMatchObject({
      actor: annActor,
      target: { type: 'member', id: bob.userId },
      details: { role: 'admin', previousRole: 'member' },
    });
    expect(entries[9]).toMatchObject({ actor: annActor, target: { type: 'invitation', id: inv.body.invitationId, email: carl.email } });
    expect(entries[12]).toMatchObject({ actor: bobActor, target: { type: 'invitation', email: bob.email } });
    expect(entries[15]).toMatchObject({
      actor: annActor,
      target: { type: 'workspace', id: ws, name: 'Audited' },
      details: { name: 'Audited', personal: false },
    });

    // No secret, no hash, no prefix of the secret anywhere, in JSON or CSV.
    const csv = await audit(ann, ws, '?format=csv');
    for (const text of [JSON.stringify(res.body), csv.text]) {
      expect(text).not.toContain(key.body.secret);
      expect(text).not.toContain(key.body.prefix);
      expect(text).not.toMatch(/[0-9a-f]{64}/);
      expect(text).not.toMatch(/keyHash|passwordHash|scrypt|customerId/);
    }
  });

  test('cursor paging walks the whole log once, newest first; CSV (by ?format=csv or Accept) holds the same entries', async () => {
    const ws = await createWorkspace(server, ann, 'Paged');
    for (let i = 0; i < 6; i++)
      await api(server)
        .patch(`/v1/workspaces/${ws}`)
        .set(ann.auth)
        .send({ name: `Paged ${i}` })
        .expect(200);
    const all = (await audit(ann, ws, '?limit=200')).body.entries as Entry[];
    expect(all).toHaveLength(8);
    const seen: Entry[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = `?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await audit(ann, ws, q);
      expect(page.status).toBe(200);
      expect(page.body.entries.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.entries);
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(all);
    expect(seen[0].details).toEqual({ name: 'Paged 5' });

    const csv = await audit(ann, ws, '?format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    await expectMatchesContract(csv, auditLog);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="tollgate-audit-${ws}.csv"`);
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('time,actor_type,actor_id,actor_name,actor_email,action,target_type,target_id,target_name,outcome,details');
    expect(lines).toHaveLength(9);
    expect(lines[1]).toBe(
      `${all[0].time},user,${ann.userId},${ann.name},${ann.email},workspace.renamed,workspace,${ws},Paged 5,succeeded,"{""name"":""Paged 5""}"`,
    );
    const byAccept = await api(server).get(`/v1/workspaces/${ws}/audit`).set(ann.auth).set('Accept', 'text/csv');
    expect(byAccept.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(byAccept.text).toBe(csv.text);
    // A cursor applies to CSV too: everything older than it.
    const older = await audit(ann, ws, `?format=csv&cursor=${(await audit(ann, ws, '?limit=2')).body.nextCursor}`);
    expect(older.text.trimEnd().split('\r\n')).toEqual([lines[0], ...lines.slice(3)]);
  });

  test('from and to pick a time window, in JSON pages and in CSV', async () => {
    const ws = await createWorkspace(server, ann, 'Windowed');
    for (let i = 0; i < 8; i++) {
      await api(server)
        .patch(`/v1/workspaces/${ws}`)
        .set(ann.auth)
        .send({ name: `Windowed ${i}` })
        .expect(200);
      await new Promise((r) => setTimeout(r, 3));
    }
    const all = (await audit(ann, ws, '?limit=200')).body.entries as Entry[];
    const from = all[6].time;
    const to = all[2].time;
    const inWindow = all.filter((e) => e.time >= from && e.time < to);
    expect(inWindow.length).toBeGreaterThanOrEqual(3);
    const seen: Entry[] = [];
    let cursor: string | null = null;
    do {
      const page = await audit(ann, ws, `?limit=2&from=${from}&to=${to}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.entries);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(inWindow);
    const csv = await audit(ann, ws, `?format=csv&from=${from}&to=${to}`);
    expect(csv.text.trimEnd().split('\r\n')).toHaveLength(inWindow.length + 1);
    expect((await audit(ann, ws, `?from=${to}&to=${from}`)).body.detail).toEqual([
      { loc: ['query', 'from'], msg: 'from must be before to', type: 'value_error' },
    ]);
    expect((await audit(ann, ws, '?from=yesterday')).body.detail[0].loc).toEqual(['query', 'from']);
  });

  test('a cell a spreadsheet would run as a formula is defused in CSV', async () => {
    const ws = await createWorkspace(server, ann, '=HYPERLINK("http://evil")');
    const csv = await audit(ann, ws, '?format=csv');
    expect(csv.text).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(csv.text).not.toMatch(/,=HYPERLINK/);
    // `|` starts a DDE call in some spreadsheets: defused too.
    const pipe = await createWorkspace(server, ann, '|cmd /c calc');
    const piped = await audit(ann, pipe, '?format=csv');
    expect(piped.text).toContain(`,'|cmd /c calc,`);
    expect(piped.text).not.toMatch(/,\|cmd/);
  });

  test('members 403, outsiders 404, no session 401, bad query 422 FastAPI-style; a workspace sees only its own events', async () => {
    const ws = await createWorkspace(server, ann, 'Private');
    await addMember(server, ann, ws, bob);
    const mine = await createWorkspace(server, eve, 'Eve only');
    expect((await audit(bob, ws)).body).toEqual({ detail: 'Forbidden' });
    expect((await audit(bob, ws, '?format=csv')).status).toBe(403);
    expect((await audit(eve, ws)).body).toEqual({ detail: 'Workspace not found' });
    expect((await api(server).get(`/v1/workspaces/${ws}/audit`)).status).toBe(401);
    for (const [q, field] of [
      ['?limit=0', 'limit'],
      ['?limit=201', 'limit'],
      ['?limit=abc', 'limit'],
      ['?limit=1.5', 'limit'],
      ['?cursor=abc', 'cursor'],
      ['?cursor=-1', 'cursor'],
      ['?format=xml', 'format'],
    ]) {
      const res = await audit(ann, ws, q);
      expect({ q, status: res.status }).toEqual({ q, status: 422 });
      expect(res.body.detail).toEqual([
        expect.objectContaining({ loc: ['query', field], msg: expect.any(String), type: expect.any(String) }),
      ]);
    }
    const eveLog = (await audit(eve, mine)).body.entries as Entry[];
    expect(eveLog.map((e) => e.action)).toEqual(['member.joined', 'workspace.created']);
    expect(JSON.stringify(eveLog)).not.toContain(ws);
  });

  test('a rebuild of the audit read model gives the same log, and new events keep landing in it', async () => {
    const ws = await createWorkspace(server, ann, 'Rebuilt');
    await addMember(server, ann, ws, bob);
    const before = (await audit(ann, ws, '?limit=200')).body;
    const s = server.services;
    await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection: auditProjection });
    expect((await audit(ann, ws, '?limit=200')).body).toEqual(before);
    await api(server).post(`/v1/workspaces/${ws}/leave`).set(bob.auth).expect(204);
    const after = (await audit(ann, ws, '?limit=200')).body.entries as Entry[];
    expect(after.map((e) => e.action)).toEqual(['member.left', ...before.entries.map((e: Entry) => e.action)]);
  });

  test('a demoted admin loses the audit log at once', async () => {
    const ws = await createWorkspace(server, ann, 'Demoted reader');
    await addMember(server, ann, ws, bob);
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).set(ann.auth).send({ role: 'admin' }).expect(200);
    expect((await audit(bob, ws)).status).toBe(200);
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).set(ann.auth).send({ role: 'member' }).expect(200);
    expect((await audit(bob, ws)).status).toBe(403);
  });
});
