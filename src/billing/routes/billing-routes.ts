import { Router } from 'express';
import type { z } from 'zod';
import { funding } from '../funding-rule';
import { minimumDeposit } from '../rules';
import { formatUsd, parseUsd } from '../../platform/money';
import { getBalance } from '../projections/balances/queries';
import { Reservations } from '../projections/balances/reservations';
import { getBillingSettings } from '../projections/billing-settings/queries';
import { ledgerPage } from '../projections/ledger/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../../accounts/routes';
import { mount } from '../../platform/http/mount';
import {
  attachPaymentMethod,
  billingRules,
  configureAutoReload,
  depositsOf,
  DepositView,
  grantCredit,
  issueCreditNote,
  makeDeposit,
} from '../usecases';
import { creditGrantsOf, type GrantView } from '../projections/grants/queries';
import { readSession, workspaceInfo } from '../../accounts';
import { requireOperator } from '../../platform/http/middleware/operator';
import { HttpError } from '../../platform/http/middleware/errors';
import {
  attachPaymentMethod as attachPaymentMethodRoute,
  autoReloadView,
  billingViewBody,
  configureAutoReload as configureAutoReloadRoute,
  depositFailed,
  depositList,
  depositPending,
  depositSucceeded,
  depositView,
  creditGrantView,
  creditNoteView,
  grantCredit as grantCreditRoute,
  issueCreditNote as issueCreditNoteRoute,
  ledger,
  ledgerPageBody,
  listCreditGrants,
  listDeposits,
  makeDeposit as makeDepositRoute,
  paymentMethodAttached,
  showBilling,
} from './billing-schemas';

/**
 * /v1/workspaces/:ws/billing — balance and what is on file (members); card, deposits and
 * auto-reload (admins); the ledger (members). Amounts are USD decimal strings, never floats.
 */

export function depositJson(d: DepositView): z.input<typeof depositView> {
  return {
    depositId: d.depositId,
    status: d.status,
    amount: formatUsd(d.amount),
    paymentIntentId: d.paymentIntentId,
    code: d.code,
    reason: d.reason,
    requestedAt: d.requestedAt,
  };
}

export function grantJson(g: GrantView): z.input<typeof creditGrantView> {
  return {
    grantId: g.grantId,
    category: g.category,
    source: g.source,
    amount: formatUsd(BigInt(g.amountNanoUsd)),
    remaining: formatUsd(g.remaining),
    expired: g.expired === null ? null : formatUsd(g.expired),
    priority: g.priority,
    expiresAt: g.expiresAt,
    grantedAt: g.grantedAt,
    status: g.status,
    ...(g.note !== undefined ? { note: g.note } : {}),
    ...(g.requestId !== undefined ? { requestId: g.requestId } : {}),
  };
}

export async function billingView(s: Services, workspaceId: string): Promise<z.input<typeof billingViewBody>> {
  const now = s.now().toISOString();
  const [bal, settings, held] = await Promise.all([
    getBalance(s.readModels, workspaceId, s.now()),
    getBillingSettings(s.readModels, workspaceId, now.slice(0, 7)),
    new Reservations(s.redis, s.ks).held(workspaceId),
  ]);
  const rules = billingRules(s.config);
  const mode = s.gateway.kind;
  const ar = settings.autoReload;
  const status = !ar || !ar.enabled ? 'disabled' : settings.suspended ? 'suspended' : settings.inFlight ? 'reloading' : 'active';
  const available = bal.balance - held;
  return {
    workspaceId,
    mode,
    ...(mode === 'sandbox'
      ? { modeNote: 'Sandbox: no card is charged (STRIPE_SECRET_KEY is unset). Use Stripe test ids such as pm_card_visa.' }
      : {}),
    balance: formatUsd(bal.balance),
    reserved: formatUsd(held),
    available: formatUsd(available < 0n ? 0n : available),
    deposited: formatUsd(bal.deposited),
    reloaded: formatUsd(bal.reloaded),
    granted: formatUsd(bal.granted),
    expired: formatUsd(bal.expired),
    spent: formatUsd(bal.debited),
    funded: funding({ paymentMethod: settings.paymentMethod, deposited: bal.deposited }, rules.initialDeposit).funded,
    initialDeposit: formatUsd(rules.initialDeposit),
    minimumDeposit: formatUsd(minimumDeposit(bal, rules)),
    paymentMethod: settings.paymentMethod
      ? { id: settings.paymentMethod.id, brand: settings.paymentMethod.brand, last4: settings.paymentMethod.last4 }
      : null,
    autoReload: ar
      ? {
          enabled: ar.enabled,
          threshold: formatUsd(ar.threshold),
          amount: formatUsd(ar.amount),
          monthlyCap: ar.monthlyCap === null ? null : formatUsd(ar.monthlyCap),
          status,
          suspendedReason: settings.suspended?.reason ?? null,
          suspendedAt: settings.suspended?.at ?? null,
          reloadedThisMonth: formatUsd(settings.reloadedThisMonth),
        }
      : null,
  };
}

export function billingRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);
  const admin = requireMember(s, { admin: true });
  const meta = (res: import('express').Response) => ({
    actor: userOf(res).userId,
    correlationId: res.locals.requestId as string | undefined,
  });

  mount(r, showBilling, session, member, async (_req, res) => {
    res.json(await billingView(s, workspaceOf(res).workspaceId));
  });

  mount(r, attachPaymentMethodRoute, session, admin, async (_req, res, { body }) => {
    const ws = workspaceOf(res).workspaceId;
    const pm = await attachPaymentMethod(s, { workspaceId: ws, paymentMethodId: body.paymentMethodId, metadata: meta(res) });
    res
      .status(200)
      .json({ paymentMethod: { id: pm.id, brand: pm.brand, last4: pm.last4 }, mode: s.gateway.kind } satisfies z.input<
        typeof paymentMethodAttached
      >);
  });

  mount(r, makeDepositRoute, session, admin, async (_req, res, { headers: { 'Idempotency-Key': key }, body }) => {
    const ws = workspaceOf(res).workspaceId;
    const d = await makeDeposit(s, {
      workspaceId: ws,
      idempotencyKey: key,
      amount: parseUsd(body.amount),
      by: userOf(res).userId,
      metadata: meta(res),
    });
    if (d.replayed) res.setHeader('Idempotent-Replayed', 'true');
    const deposit = depositJson(d);
    const mode = s.gateway.kind;
    if (d.status === 'succeeded') {
      res.status(201).json({ deposit, mode, billing: await billingView(s, ws) } satisfies z.input<typeof depositSucceeded>);
    } else if (d.status === 'failed') {
      res.status(402).json({ detail: `The deposit failed: ${d.reason ?? d.code}`, deposit, mode } satisfies z.input<typeof depositFailed>);
    } else {
      res.status(202).json({
        deposit: { ...deposit, status: 'pending' },
        mode,
        detail:
          'The payment provider did not answer in time. The deposit is settled when its answer arrives (Stripe webhook), or retry this request with the same Idempotency-Key.',
      } satisfies z.input<typeof depositPending>);
    }
  });

  mount(r, configureAutoReloadRoute, session, admin, async (_req, res, { body }) => {
    const ws = workspaceOf(res).workspaceId;
    await configureAutoReload(s, {
      workspaceId: ws,
      enabled: body.enabled,
      threshold: parseUsd(body.threshold),
      amount: parseUsd(body.amount),
      monthlyCap: body.monthlyCap == null ? null : parseUsd(body.monthlyCap),
      by: userOf(res).userId,
      metadata: meta(res),
    });
    res.json((await billingView(s, ws)).autoReload satisfies z.input<typeof autoReloadView> | null);
  });

  mount(r, ledger, session, member, async (_req, res, { query: q }) => {
    const ws = workspaceOf(res).workspaceId;
    const page = await ledgerPage(s.readModels, ws, q.cursor ? Number(q.cursor) : 0, q.limit);
    res.json({
      workspaceId: ws,
      entries: page.entries.map((e) => ({
        ...e,
        amount: formatUsd(BigInt(e.amountNanoUsd)),
        balance: formatUsd(BigInt(e.balanceNanoUsd)),
      })),
      total: page.total,
      nextCursor: page.next === null ? null : String(page.next),
    } satisfies z.input<typeof ledgerPageBody>);
  });

  const operator = requireOperator(s.config.ADMIN_TOKEN, async (token) => (await readSession(s, token)) !== null);
  mount(r, grantCreditRoute, operator, async (_req, res, { params, headers: { 'Idempotency-Key': key }, body }) => {
    if (!(await workspaceInfo(s.readModels, params.ws))) throw new HttpError(404, `No workspace ${params.ws}`);
    const g = await grantCredit(s, {
      workspaceId: params.ws,
      idempotencyKey: key,
      amount: parseUsd(body.amount),
      priority: body.priority,
      expiresAt: body.expiresAt ?? null,
      note: body.note,
      metadata: { actor: 'operator', correlationId: res.locals.requestId as string | undefined },
    });
    if (g.replayed) res.setHeader('Idempotent-Replayed', 'true');
    const view = (await creditGrantsOf(s.readModels, params.ws, s.now())).find((v) => v.grantId === g.grantId)!;
    res.status(201).json({ grant: grantJson(view) });
  });

  mount(r, issueCreditNoteRoute, operator, async (_req, res, { params, headers: { 'Idempotency-Key': key }, body }) => {
    if (!(await workspaceInfo(s.readModels, params.ws))) throw new HttpError(404, `No workspace ${params.ws}`);
    const n = await issueCreditNote(s, {
      workspaceId: params.ws,
      requestId: params.requestId,
      idempotencyKey: key,
      amount: parseUsd(body.amount),
      reason: body.reason,
      metadata: { actor: 'operator', correlationId: res.locals.requestId as string | undefined },
    });
    if (n.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.status(201).json({
      creditNote: {
        creditNoteId: n.note.creditNoteId,
        requestId: n.note.requestId,
        amount: formatUsd(n.note.amount),
        reason: n.note.reason,
        issuedAt: n.note.issuedAt,
        requestCost: formatUsd(n.cost),
        credited: formatUsd(n.credited),
      },
    } satisfies { creditNote: z.input<typeof creditNoteView> });
  });

  mount(r, listCreditGrants, session, member, async (_req, res) => {
    const grants = await creditGrantsOf(s.readModels, workspaceOf(res).workspaceId, s.now());
    res.json({ grants: grants.map(grantJson) });
  });

  /** The deposits of the workspace (requested, succeeded, failed), newest first. */
  mount(r, listDeposits, session, member, async (_req, res) => {
    const ws = workspaceOf(res).workspaceId;
    const { deposits, minimumDeposit: min } = await depositsOf(s, ws);
    res.json({ deposits: deposits.map((d) => depositJson({ ...d, replayed: false })), minimumDeposit: formatUsd(min) } satisfies z.input<
      typeof depositList
    >);
  });

  return r;
}
