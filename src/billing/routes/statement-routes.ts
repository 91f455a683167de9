import { Router } from 'express';
import type { z } from 'zod';
import { keysOf, auditKeys, profilesOf, workspaceInfo } from '../../accounts';
import { requireMember, requireSession, workspaceOf } from '../../accounts/routes';
import { monthRange, statementMonthProblem, statementMonths, type MonthlyStatement } from '../statement';
import { depositReceipt, monthlyStatementOf } from '../usecases';
import { mount } from '../../platform/http/mount';
import { csvLine } from '../../platform/http/csv';
import { HttpError } from '../../platform/http/middleware/errors';
import { formatUsd } from '../../platform/money';
import type { Services } from '../../services';
import { receiptPdf, statementPdf } from './statement-pdf';
import {
  listStatements,
  receiptBody,
  showReceipt,
  showStatement,
  STATEMENT_CSV_COLUMNS,
  statementBody,
  statementMonthsBody,
} from './statement-schemas';

/**
 * GET /v1/workspaces/:ws/statements, …/statements/:month?format=json|csv|pdf and
 * …/billing/deposits/:depositId/receipt?format=json|pdf (members).
 */

async function created(s: Services, workspaceId: string): Promise<{ name: string; created: string }> {
  const info = await workspaceInfo(s.readModels, workspaceId);
  return { name: info?.name ?? workspaceId, created: info?.created ?? s.now().toISOString() };
}

async function statementJson(s: Services, name: string, st: MonthlyStatement): Promise<z.input<typeof statementBody>> {
  const ids = [...new Set(st.usage.map((u) => u.keyId))];
  const names = new Map((await keysOf(s.readModels, st.workspaceId)).map((k) => [k.keyId, k.name]));
  for (const [id, k] of await auditKeys(
    s.readModels,
    ids.filter((id) => !names.has(id)),
  ))
    if (k.name) names.set(id, k.name);
  return {
    workspaceId: st.workspaceId,
    workspaceName: name,
    month: st.month,
    periodStart: st.periodStart,
    periodEnd: st.periodEnd,
    complete: s.now().toISOString() >= st.periodEnd,
    openingBalance: formatUsd(st.opening),
    credits: st.credits.map((c) => ({
      at: c.at,
      kind: c.kind,
      reference: c.ref,
      paymentReference: c.paymentReference,
      amount: formatUsd(c.amount),
    })),
    expiries: st.expiries.map((e) => ({ at: e.at, reference: e.ref, amount: formatUsd(e.amount) })),
    usage: st.usage.map((u) => ({ ...u, keyName: names.get(u.keyId) ?? null, cost: formatUsd(u.cost) })),
    totals: {
      deposits: formatUsd(st.deposited),
      reloads: formatUsd(st.reloaded),
      grants: formatUsd(st.granted),
      credits: formatUsd(st.deposited + st.reloaded + st.granted),
      expiries: formatUsd(st.expired),
      debits: formatUsd(st.debited + st.expired),
    },
    closingBalance: formatUsd(st.closing),
    receipts: st.receipts,
  };
}

function statementCsv(st: z.input<typeof statementBody>): string {
  let out = csvLine(STATEMENT_CSV_COLUMNS);
  out += csvLine(['opening_balance', st.periodStart, '', '', '', '', '', '', '', st.openingBalance]);
  for (const c of st.credits) out += csvLine([c.kind, c.at, c.reference, c.paymentReference, '', '', '', '', '', c.amount]);
  for (const e of st.expiries) out += csvLine(['expiry', e.at, e.reference, '', '', '', '', '', '', `-${e.amount}`.replace(/^-0$/, '0')]);
  for (const u of st.usage)
    out += csvLine(['usage', '', '', '', u.keyId, u.config, u.requests, u.inputTokens, u.outputTokens, `-${u.cost}`.replace(/^-0$/, '0')]);
  out += csvLine(['total_credits', '', '', '', '', '', '', '', '', st.totals.credits]);
  out += csvLine(['total_debits', '', '', '', '', '', '', '', '', st.totals.debits === '0' ? '0' : `-${st.totals.debits}`]);
  out += csvLine(['closing_balance', st.periodEnd, '', '', '', '', '', '', '', st.closingBalance]);
  return out;
}

const attachment = (type: string, filename: string) => ({
  'Content-Type': type,
  'Content-Disposition': `attachment; filename="${filename}"`,
  'Cache-Control': 'no-store',
});

export function statementRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);

  mount(r, listStatements, session, member, async (_req, res) => {
    const ws = workspaceOf(res).workspaceId;
    const w = await created(s, ws);
    const now = s.now();
    res.json({
      workspaceId: ws,
      months: statementMonths(w.created, now).map((month) => {
        const range = monthRange(month)!;
        return { month, periodStart: range.start, periodEnd: range.end, complete: now.toISOString() >= range.end };
      }),
    } satisfies z.input<typeof statementMonthsBody>);
  });

  mount(r, showStatement, session, member, async (_req, res, { params, query }) => {
    const ws = workspaceOf(res).workspaceId;
    const w = await created(s, ws);
    const problem = statementMonthProblem(params.month, s.now(), w.created);
    if (problem) throw new HttpError(422, [{ loc: ['path', 'month'], msg: problem, type: 'value_error' }]);
    const st = await statementJson(s, w.name, await monthlyStatementOf(s, { workspaceId: ws, created: w.created }, params.month));
    const file = `tollgate-statement-${ws}-${params.month}`;
    if (query.format === 'csv') res.set(attachment('text/csv; charset=utf-8', `${file}.csv`)).send(statementCsv(st));
    else if (query.format === 'pdf') res.set(attachment('application/pdf', `${file}.pdf`)).send(await statementPdf(st));
    else res.set('Cache-Control', 'no-store').json(st);
  });

  mount(r, showReceipt, session, member, async (_req, res, { params, query }) => {
    const ws = workspaceOf(res).workspaceId;
    const [w, rec] = await Promise.all([created(s, ws), depositReceipt(s, ws, params.depositId)]);
    const payer = (await profilesOf(s.readModels, [rec.by])).get(rec.by);
    const body: z.input<typeof receiptBody> = {
      workspaceId: ws,
      workspaceName: w.name,
      receiptNumber: rec.depositId,
      amount: formatUsd(rec.amount),
      currency: 'USD',
      paidAt: rec.paidAt,
      paymentReference: rec.paymentReference,
      gateway: rec.gateway,
      card: rec.card,
      paidBy: { userId: rec.by, name: payer?.name ?? null, email: payer?.email ?? null },
    };
    if (query.format === 'pdf')
      res.set(attachment('application/pdf', `tollgate-receipt-${rec.depositId}.pdf`)).send(await receiptPdf(body));
    else res.set('Cache-Control', 'no-store').json(body);
  });

  return r;
}
