import { Router } from 'express';
import type { z } from 'zod';
import { defaultMonthlyCap, minimumDeposit, foldBilling, decideConfigureAutoReload, billingDecider } from '../../domain/billing/billing';
import { formatUsd, parseUsd } from '../../domain/money';
import { streams } from '../../domain/streams';
import { handleCommand } from '../../eventstore/command-handler';
import { GatewayRejected, GatewayUnavailable } from '../../payments/port';
import { getBalance } from '../../projections/balances/queries';
import { Reservations } from '../../projections/balances/reservations';
import { getBillingSettings } from '../../projections/billing-settings/queries';
import { ledgerPage } from '../../projections/ledger/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../accounts/access';
import { validate } from '../contract';
import { HttpError } from '../middleware/errors';
import {
  attachPaymentMethod as attachPaymentMethodRoute,
  autoReloadView,
  billingViewBody,
  configureAutoReload,
  depositFailed,
  depositList,
  depositPending,
  depositSucceeded,
  depositView,
  ledger,
  ledgerPageBody,
  listDeposits,
  makeDeposit as makeDepositRoute,
  paymentMethodAttached,
  showBilling,
} from './schemas';
import { attachPaymentMethod, billingRules, DepositView, gatewayOf, makeDeposit } from './service';

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

export async function billingView(s: Services, workspaceId: string): Promise<z.input<typeof billingViewBody>> {
  const now = s.now().toISOString();
  const [bal, settings, held] = await Promise.all([
    getBalance(s.readModels, workspaceId),
    getBillingSettings(s.readModels, workspaceId, now.slice(0, 7)),
    new Reservations(s.redis, s.ks).held(workspaceId),
  ]);
  const rules = billingRules(s.config);
  const mode = gatewayOf(s).kind;
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
    spent: formatUsd(bal.debited),
    funded: settings.paymentMethod !== null && bal.deposited >= rules.initialDeposit,
    initialDeposit: formatUsd(rules.initialDeposit),
    minimumDeposit: formatUsd(bal.deposited > 0n ? rules.minDeposit : rules.initialDeposit),
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

  r.get(showBilling.path, session, member, async (_req, res) => {
    res.json(await billingView(s, workspaceOf(res).workspaceId));
  });

  r.post(attachPaymentMethodRoute.path, session, admin, async (req, res) => {
    const { body } = validate(attachPaymentMethodRoute, req);
    const ws = workspaceOf(res).workspaceId;
    try {
      const pm = await attachPaymentMethod(s, { workspaceId: ws, paymentMethodId: body.paymentMethodId, metadata: meta(res) });
      res.status(200).json({ paymentMethod: { id: pm.id, brand: pm.brand, last4: pm.last4 }, mode: gatewayOf(s).kind } satisfies z.input<typeof paymentMethodAttached>);
    } catch (err) {
      throw gatewayHttpError(err, 'paymentMethodId');
    }
  });

  r.post(makeDepositRoute.path, session, admin, async (req, res) => {
    const key = req.header('idempotency-key');
    if (!key || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
      throw new HttpError(422, [
        {
          loc: ['header', 'Idempotency-Key'],
          msg: 'An Idempotency-Key header (1 to 255 visible characters, e.g. a uuid) is required: a retry with the same key never charges twice',
          type: 'missing',
        },
      ]);
    }
    const { body } = validate(makeDepositRoute, req);
    const ws = workspaceOf(res).workspaceId;
    let d: DepositView;
    try {
      d = await makeDeposit(s, { workspaceId: ws, idempotencyKey: key, amount: parseUsd(body.amount), by: userOf(res).userId, metadata: meta(res) });
    } catch (err) {
      throw gatewayHttpError(err);
    }
    if (d.replayed) res.setHeader('Idempotent-Replayed', 'true');
    const deposit = depositJson(d);
    const mode = gatewayOf(s).kind;
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

  r.put(configureAutoReload.path, session, admin, async (req, res) => {
    const { body } = validate(configureAutoReload, req);
    const ws = workspaceOf(res).workspaceId;
    const h = await handleCommand(
      s.store,
      streams.billing(ws),
      billingDecider,
      (st) =>
        decideConfigureAutoReload(
          st,
          {
            workspaceId: ws,
            enabled: body.enabled,
            threshold: parseUsd(body.threshold),
            amount: parseUsd(body.amount),
            // Never without a bound: an unset cap defaults to a few reloads a month.
            monthlyCap: body.monthlyCap == null ? defaultMonthlyCap(parseUsd(body.amount)) : parseUsd(body.monthlyCap),
            by: userOf(res).userId,
          },
          billingRules(s.config),
        ),
      { metadata: meta(res), newId: s.newId },
    );
    if (h.appended) await s.progress.waitFor(h.appended.position, s.config.READ_YOUR_WRITES_TIMEOUT_MS);
    res.json((await billingView(s, ws)).autoReload satisfies z.input<typeof autoReloadView> | null);
  });

  r.get(ledger.path, session, member, async (req, res) => {
    const q = validate(ledger, req).query;
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

  /** The deposits of the workspace (requested, succeeded, failed), newest first. */
  r.get(listDeposits.path, session, member, async (_req, res) => {
    const ws = workspaceOf(res).workspaceId;
    const st = foldBilling(await s.store.readStream(streams.billing(ws)));
    const deposits = [...st.deposits.values()].reverse().map((d) => depositJson({ ...d, replayed: false }));
    res.json({ deposits, minimumDeposit: formatUsd(minimumDeposit(st, billingRules(s.config))) } satisfies z.input<typeof depositList>);
  });

  return r;
}

/** A refusal about a value the client sent (`field`: an unknown payment method) is 422 like any other bad value. */
function gatewayHttpError(err: unknown, field?: string): unknown {
  if (err instanceof GatewayRejected) {
    if (err.code === 'idempotency_error') return new HttpError(409, err.message);
    if (field && err.status !== 402) {
      return new HttpError(422, [{ loc: ['body', field], msg: `The payment provider refused it: ${err.message}`, type: 'value_error' }]);
    }
    return new HttpError(err.status === 402 ? 402 : 400, `The payment provider refused: ${err.message}`);
  }
  if (err instanceof GatewayUnavailable) {
    return new HttpError(503, 'The payment provider is unavailable; try again shortly', { 'Retry-After': '5' });
  }
  return err;
}
