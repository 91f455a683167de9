import { Router } from 'express';
import type { z } from 'zod';
import { billingDecider, funding, keyHolds, keySpend } from '../../billing';
import { requireAcceptedPolicy } from '../../policy/routes';
import { loadState } from '../../platform/eventstore/command-handler';
import { budgetLeft, budgetMonth } from '../budget';
import { formatUsd, parseUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import { keysOf } from '../projections/api-keys/queries';
import { hashKey } from '../projections/key-index/queries';
import { profilesOf } from '../projections/users/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { validate } from '../../platform/http/contract';
import { metaOf, settle } from './common';
import { createKey, createKeyAt, deleteKey, keyCreated, keyList, keyView, listKeys } from './key-schemas';
import { displayPrefix, generateKeySecret, lastFour } from '../key-secrets';
import { forgetKeyLastUsed, keysLastUsed } from '../key-last-used';
import { workspaceCommand } from './workspace-routes';

/** The scopes a key gets when the request names none. */
export const DEFAULT_SCOPES = ['inference'];

/** The key list as GET …/keys shows it, with each key's budget, its spend this UTC month and what is left. */
export async function keyListView(s: Services, workspaceId: string): Promise<z.input<typeof keyView>[]> {
  const keys = await keysOf(s.readModels, workspaceId);
  const nowDate = s.now();
  const month = budgetMonth(nowDate.toISOString());
  const ids = keys.map((k) => k.keyId);
  const [lastUsed, profiles, spend, holds] = await Promise.all([
    keysLastUsed(s.redis, s.ks, ids),
    profilesOf(s.readModels, [...new Set(keys.map((k) => k.createdBy))]),
    keySpend(s.readModels, ids, month),
    keyHolds(s.redis, s.ks, ids),
  ]);
  const now = nowDate.getTime();
  return keys.map((k) => {
    const spent = spend.get(k.keyId) ?? 0n;
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
      monthlyBudget: k.monthlyBudget === null ? null : formatUsd(k.monthlyBudget),
      spendMonth: month,
      monthToDateSpend: formatUsd(spent),
      // What the next request can still use: requests in flight hold part of the budget too.
      budgetRemaining: k.monthlyBudget === null ? null : formatUsd(budgetLeft(k.monthlyBudget, spent, holds.get(k.keyId) ?? 0n)),
    };
  });
}

/** /v1/workspaces/:ws/keys: list, create (funded workspace), delete. Any member. */
export function keyRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);

  r.get(listKeys.path, session, member, async (_req, res) => {
    res.json({ keys: await keyListView(s, workspaceOf(res).workspaceId) } satisfies z.input<typeof keyList>);
  });

  r.post(createKey.path, session, member, requireAcceptedPolicy(s), async (req, res) => {
    const now = s.now();
    const input = validate(createKeyAt(now), req).body;
    const w = workspaceOf(res);
    const user = userOf(res);
    const { state: billing } = await loadState(s.store, streams.billing(w.workspaceId), billingDecider);
    const required = parseUsd(s.config.INITIAL_DEPOSIT_USD);
    const secret = generateKeySecret();
    const keyId = s.newId();
    const expiresAt = input.expiresAt ? new Date(input.expiresAt).toISOString() : null;
    const scopes = input.scopes ? [...new Set(input.scopes)] : DEFAULT_SCOPES;
    const done = await workspaceCommand(
      s,
      w.workspaceId,
      {
        type: 'CreateApiKey',
        data: {
          keyId,
          name: input.name,
          keyHash: hashKey(secret),
          prefix: displayPrefix(secret),
          last4: lastFour(secret),
          scopes,
          expiresAt,
          by: user.userId,
          now: now.toISOString(),
          funding: funding(billing, required),
          requiredDepositNanoUsd: required,
        },
      },
      metaOf(res),
    );
    // The key works on the next request: wait until the key index has it.
    await settle(s, done.appended);
    res
      .status(201)
      .set('Cache-Control', 'no-store')
      .json({
        keyId,
        name: input.name,
        prefix: displayPrefix(secret),
        last4: lastFour(secret),
        scopes,
        expiresAt,
        created: now.toISOString(),
        createdBy: { userId: user.userId, name: user.name },
        secret,
      } satisfies z.input<typeof keyCreated>);
  });

  r.delete(deleteKey.path, session, member, async (req, res) => {
    const { keyId } = validate(deleteKey, req).params;
    const w = workspaceOf(res);
    const done = await workspaceCommand(s, w.workspaceId, { type: 'DeleteApiKey', data: { keyId, by: userOf(res).userId } }, metaOf(res));
    // The key fails on the next request: wait until the key index dropped it.
    await settle(s, done.appended);
    await forgetKeyLastUsed(s.redis, s.ks, keyId);
    res.status(204).end();
  });

  return r;
}
