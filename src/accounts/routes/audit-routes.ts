import { Router } from 'express';
import type { z } from 'zod';
import type { StoredAuditEntry } from '../projections/audit/entries';
import { AuditPage, auditInvitationEmails, auditKeys, auditPage, PagedAuditEntry } from '../projections/audit/queries';
import { profilesOf } from '../projections/users/queries';
import type { Services } from '../../services';
import { mount } from '../../platform/http/mount';
import { HttpError } from '../../platform/http/middleware/errors';
import { csvCell } from '../../platform/http/csv';
import { requireMember, requireSession, workspaceOf } from '../sessions/access';
import { auditActor, auditEntry, auditLog, auditPageBody, CSV_COLUMNS } from './audit-schemas';

const CSV_PAGE = 500;

/**
 * Entries older than `cursor` within [from, to), newest first, up to `limit`. Times grow with
 * positions, so the scan stops at the first entry older than `from`.
 */
async function window(
  s: Services,
  workspaceId: string,
  q: { cursor?: string; limit: number; from?: string; to?: string },
): Promise<AuditPage> {
  const from = q.from ? Date.parse(q.from) : -Infinity;
  const to = q.to ? Date.parse(q.to) : Infinity;
  if (from === -Infinity && to === Infinity) return auditPage(s.readModels, workspaceId, q);
  const entries: PagedAuditEntry[] = [];
  let cursor = q.cursor;
  for (;;) {
    const page = await auditPage(s.readModels, workspaceId, { cursor, limit: Math.max(q.limit, 200) });
    for (const [i, e] of page.entries.entries()) {
      const t = Date.parse(e.time);
      if (t < from) return { entries, nextCursor: null };
      if (t >= to) continue;
      entries.push(e);
      if (entries.length === q.limit) {
        const more = i < page.entries.length - 1 || page.nextCursor !== null;
        return { entries, nextCursor: more ? e.cursor : null };
      }
    }
    if (!page.nextCursor) return { entries, nextCursor: null };
    cursor = page.nextCursor;
  }
}

export type AuditActor = z.output<typeof auditActor>;

/** Resolves the ids of stored entries into names: people from the users read model, keys and invitations from the audit's own. */
async function resolve(s: Services, stored: StoredAuditEntry[]): Promise<z.input<typeof auditEntry>[]> {
  const userIds = new Set<string>();
  const keyIds = new Set<string>();
  const invitationIds = new Set<string>();
  const kinds = stored.map((e) => actorKind(e.actor));
  kinds.forEach((k) => (k.type === 'user' ? userIds.add(k.id) : k.type === 'apiKey' ? keyIds.add(k.id) : undefined));
  for (const e of stored) {
    if (e.target?.type === 'member') userIds.add(e.target.id);
    if (e.target?.type === 'apiKey') keyIds.add(e.target.id);
    if (e.target?.type === 'invitation' && !e.target.email) invitationIds.add(e.target.id);
  }
  const [profiles, keys, emails] = await Promise.all([
    profilesOf(s.readModels, [...userIds]),
    auditKeys(s.readModels, [...keyIds]),
    auditInvitationEmails(s.readModels, [...invitationIds]),
  ]);
  return stored.map((e, i) => {
    const k = kinds[i];
    const actor: AuditActor =
      k.type === 'user'
        ? { type: 'user', userId: k.id, name: profiles.get(k.id)?.name ?? null, email: profiles.get(k.id)?.email ?? null }
        : k.type === 'apiKey'
          ? { type: 'apiKey', keyId: k.id, name: keys.get(k.id)?.name ?? null, last4: keys.get(k.id)?.last4 ?? null }
          : k.type === 'operator'
            ? { type: 'operator' }
            : { type: 'system', name: k.id };
    let target = e.target;
    if (target?.type === 'member') target = { ...target, name: profiles.get(target.id)?.name, email: profiles.get(target.id)?.email };
    if (target?.type === 'apiKey') target = { ...target, name: keys.get(target.id)?.name, last4: keys.get(target.id)?.last4 };
    if (target?.type === 'invitation' && !target.email) target = { ...target, email: emails.get(target.id) };
    return { id: e.id, time: e.time, actor, action: e.action, target, outcome: e.outcome, details: e.details };
  });
}

function actorKind(actor: string | null): { type: 'user' | 'apiKey' | 'operator' | 'system'; id: string } {
  if (!actor) return { type: 'system', id: 'unknown' };
  if (actor.startsWith('apikey:')) return { type: 'apiKey', id: actor.slice('apikey:'.length) };
  if (actor === 'operator') return { type: 'operator', id: 'operator' };
  if (actor === 'anonymous' || actor === 'stripe-webhook' || actor === 'webhook-delivery' || /^(worker|system):/.test(actor))
    return { type: 'system', id: actor };
  return { type: 'user', id: actor };
}

type Entry = Awaited<ReturnType<typeof resolve>>[number];

function csvRow(e: Entry): string {
  const a = e.actor;
  const actorId = a.type === 'user' ? a.userId : a.type === 'apiKey' ? a.keyId : a.type === 'system' ? a.name : '';
  const actorName = a.type === 'user' ? a.name : a.type === 'apiKey' ? (a.name ? `${a.name} (…${a.last4 ?? ''})` : null) : null;
  const actorEmail = a.type === 'user' ? a.email : null;
  const t = e.target;
  const targetName = t ? (t.name ?? t.email ?? (t.last4 ? `${t.brand ?? ''} …${t.last4}`.trim() : null)) : null;
  return (
    [e.time, a.type, actorId, actorName, actorEmail, e.action, t?.type, t?.id, targetName, e.outcome, JSON.stringify(e.details)]
      .map(csvCell)
      .join(',') + '\r\n'
  );
}

/** GET /v1/workspaces/:ws/audit (admins): JSON pages, or the whole log as CSV. */
export function auditRoutes(s: Services): Router {
  const r = Router();
  mount(r, auditLog, requireSession(s), requireMember(s, { admin: true }), async (req, res, { query: q }) => {
    if (q.from && q.to && Date.parse(q.from) >= Date.parse(q.to)) {
      throw new HttpError(422, [{ loc: ['query', 'from'], msg: 'from must be before to', type: 'value_error' }]);
    }
    const w = workspaceOf(res);
    // Without ?format, Accept decides; */* and no Accept at all get JSON.
    const csv = q.format === 'csv' || (q.format === undefined && req.accepts(['application/json', 'text/csv']) === 'text/csv');
    if (!csv) {
      const page = await window(s, w.workspaceId, q);
      res
        .set('Cache-Control', 'no-store')
        .json({ entries: await resolve(s, page.entries), nextCursor: page.nextCursor } satisfies z.input<typeof auditPageBody>);
      return;
    }
    res
      .status(200)
      .set({
        'Content-Type': 'text/csv; charset=utf-8',
        'Content-Disposition': `attachment; filename="tollgate-audit-${w.workspaceId}.csv"`,
        'Cache-Control': 'no-store',
      })
      .write(CSV_COLUMNS.join(',') + '\r\n');
    let cursor = q.cursor;
    for (;;) {
      const page = await window(s, w.workspaceId, { ...q, cursor, limit: CSV_PAGE });
      const rows = (await resolve(s, page.entries)).map(csvRow).join('');
      if (rows && !res.write(rows)) await new Promise((ok) => res.once('drain', ok));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    res.end();
  });
  return r;
}
