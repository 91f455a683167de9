import { Router } from 'express';
import type { z } from 'zod';
import { budgetLeft } from '../budget';
import { periodIdsAt, periodWindow } from '../../platform/budget-periods';
import { formatUsd } from '../../platform/money';
import { budgetStack, keyHolds, keySpend } from '../../billing';
import { requireAcceptedPolicy } from '../policy/routes';
import { keysOf } from '../projections/api-keys/queries';
import { profilesOf } from '../projections/users/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { HttpError } from '../../platform/http/middleware/errors';
import { mount } from '../../platform/http/mount';
import { metaOf } from './common';
import { createKey, deleteKey, keyBudgets, keyCreated, keyList, keyView, listKeys, pastExpiry } from './key-schemas';
import { keysLastUsed } from '../key-last-used';
import * as uc from '../usecases';

/** The key list as GET …/keys shows it, with each key's budget, its spend in the budget's period and what is left. */
export async function keyListView(s: Services, workspaceId: string): Promise<z.input<typeof keyView>[]> {
  const keys = await keysOf(s.readModels, workspaceId);
  const nowDate = s.now();
  const periods = periodIdsAt(nowDate);
  const month = periods.monthly;
  const ids = keys.map((k) => k.keyId);
  const periodOf = new Map(keys.map((k) => [k.keyId, k.budgetPeriod]));
  const [lastUsed, profiles, spend, monthSpend, holds] = await Promise.all([
    keysLastUsed(s.redis, s.ks, ids),
    profilesOf(s.readModels, [...new Set(keys.map((k) => k.createdBy))]),
    keySpend(s.readModels, workspaceId, ids, (id) => periods[periodOf.get(id) ?? 'monthly']),
    keySpend(s.readModels, workspaceId, ids, month),
    keyHolds(s.redis, s.ks, workspaceId, ids),
  ]);
  const now = nowDate.getTime();
  return keys.map((k) => {
    const spent = spend.get(k.keyId) ?? 0n;
    const window = k.budget === null ? null : periodWindow(k.budgetPeriod, nowDate);
    return {
      keyId: k.keyId,
      name: k.name,
      prefix: k.prefix,
      last4: k.last4,
      scopes: k.scopes,
      created: k.created,
      createdBy: { userId: k.createdBy, name: profiles.get(k.createdBy)?.name ?? null },
      expiresAt: k.expiresAt,
      expired: k.expiresAt !== null && Date.parse(k.expiresAt) <= now,
      lastUsed: lastUsed.get(k.keyId) ?? null,
      lastRoll: k.lastRoll,
      budget: k.budget === null ? null : formatUsd(k.budget),
      budgetPeriod: k.budget === null ? null : k.budgetPeriod,
      budgetPeriodId: window?.id ?? null,
      budgetSpent: k.budget === null ? null : formatUsd(spent),
      budgetResetsAt: window?.resetsAt.toISOString() ?? null,
      // What the next request can still use: requests in flight hold part of the budget too.
      budgetRemaining: k.budget === null ? null : formatUsd(budgetLeft(k.budget, spent, holds.get(k.keyId) ?? 0n)),
      monthlyBudget: k.budget !== null && k.budgetPeriod === 'monthly' ? formatUsd(k.budget) : null,
      spendMonth: month,
      monthToDateSpend: formatUsd(monthSpend.get(k.keyId) ?? 0n),
    };
  });
}

/** /v1/workspaces/:ws/keys: list, create (funded workspace), delete. Any member. */
export function keyRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);

  mount(r, listKeys, session, member, async (_req, res) => {
    res.json({ keys: await keyListView(s, workspaceOf(res).workspaceId) } satisfies z.input<typeof keyList>);
  });

  mount(r, createKey, session, member, requireAcceptedPolicy(s), async (_req, res, { body: input }) => {
    const now = s.now();
    const past = pastExpiry(input.expiresAt, now);
    if (past) throw new HttpError(422, past);
    const user = userOf(res);
    const key = await uc.createKey(s, {
      workspaceId: workspaceOf(res).workspaceId,
      name: input.name,
      scopes: input.scopes,
      expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
      by: user.userId,
      now,
      metadata: metaOf(res),
    });
    res
      .status(201)
      .set('Cache-Control', 'no-store')
      .json({
        keyId: key.keyId,
        name: input.name,
        prefix: key.prefix,
        last4: key.last4,
        scopes: key.scopes,
        expiresAt: key.expiresAt,
        created: now.toISOString(),
        createdBy: { userId: user.userId, name: user.name },
        secret: key.secret,
      } satisfies z.input<typeof keyCreated>);
  });

  mount(r, keyBudgets, session, member, async (_req, res, { params: { keyId } }) => {
    const { workspaceId } = workspaceOf(res);
    const key = (await keysOf(s.readModels, workspaceId)).find((k) => k.keyId === keyId);
    if (!key) throw new HttpError(404, 'API key not found');
    const layers = await budgetStack(s, { workspaceId, keyId, createdBy: key.createdBy }, s.now());
    const tightest = layers.reduce((a, b) => (b.remaining < a.remaining ? b : a));
    const usdOrNull = (n: bigint | null) => (n === null ? null : formatUsd(n));
    res.setHeader('Cache-Control', 'no-store');
    res.json({
      keyId,
      layers: layers.map((l) => ({
        scope: l.scope,
        limit: formatUsd(l.limit),
        period: l.period,
        spent: usdOrNull(l.spent),
        held: formatUsd(l.held),
        remaining: formatUsd(l.remaining),
        resetsAt: l.resetsAt,
        ...(l.userId ? { userId: l.userId } : {}),
      })),
      tightest: { scope: tightest.scope, remaining: formatUsd(tightest.remaining) },
    });
  });

  mount(r, deleteKey, session, member, async (_req, res, { params: { keyId } }) => {
    await uc.deleteKey(s, { workspaceId: workspaceOf(res).workspaceId, keyId, by: userOf(res).userId, metadata: metaOf(res) });
    res.status(204).end();
  });

  return r;
}
