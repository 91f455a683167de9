import { Router } from 'express';
import { z } from 'zod';
import { KEY_NAME_MAX, KEY_NAME_MIN } from '../../domain/accounts/workspace';
import { funding } from '../../domain/billing/funding';
import { parseUsd } from '../../domain/money';
import { streams } from '../../domain/streams';
import { keysOf } from '../../projections/api-keys/queries';
import { hashKey } from '../../projections/key-index/queries';
import { profilesOf } from '../../projections/users/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from './access';
import { metaOf, settle } from './common';
import { displayPrefix, generateKeySecret, lastFour } from './keys';
import { forgetKeyLastUsed, keysLastUsed } from './last-used';
import { workspaceCommand } from './workspace-routes';

/** The scopes a key may carry. `inference` is what the two inference endpoints require. */
export const KEY_SCOPES = ['inference'] as const;
export const DEFAULT_SCOPES = ['inference'];

function createBody(now: Date) {
  return z.object({
    name: z
      .string()
      .trim()
      .min(KEY_NAME_MIN, `A key name must be at least ${KEY_NAME_MIN} characters long`)
      .max(KEY_NAME_MAX, `A key name must be at most ${KEY_NAME_MAX} characters long`),
    scopes: z.array(z.enum(KEY_SCOPES)).max(KEY_SCOPES.length * 2).optional(),
    expiresAt: z
      .union([z.iso.datetime({ offset: true }), z.null()])
      .optional()
      .refine((v) => v == null || Date.parse(v) > now.getTime(), 'expiresAt must lie in the future'),
  });
}

/** /v1/workspaces/:ws/keys: list, create (funded workspace), delete. Any member. */
export function keyRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);

  r.get('/v1/workspaces/:ws/keys', session, member, async (_req, res) => {
    const w = workspaceOf(res);
    const keys = await keysOf(s.readModels, w.workspaceId);
    const [lastUsed, profiles] = await Promise.all([
      keysLastUsed(s.redis, s.ks, keys.map((k) => k.keyId)),
      profilesOf(s.readModels, [...new Set(keys.map((k) => k.createdBy))]),
    ]);
    const now = s.now().getTime();
    res.json({
      keys: keys.map((k) => ({
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
      })),
    });
  });

  r.post('/v1/workspaces/:ws/keys', session, member, async (req, res) => {
    const now = s.now();
    const input = createBody(now).parse(req.body ?? {});
    const w = workspaceOf(res);
    const user = userOf(res);
    const billing = await s.store.readStream(streams.billing(w.workspaceId));
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
      });
  });

  r.delete('/v1/workspaces/:ws/keys/:keyId', session, member, async (req, res) => {
    const w = workspaceOf(res);
    const keyId = String(req.params.keyId);
    const done = await workspaceCommand(s, w.workspaceId, { type: 'DeleteApiKey', data: { keyId, by: userOf(res).userId } }, metaOf(res));
    // The key fails on the next request: wait until the key index dropped it.
    await settle(s, done.appended);
    await forgetKeyLastUsed(s.redis, s.ks, keyId);
    res.status(204).end();
  });

  return r;
}
