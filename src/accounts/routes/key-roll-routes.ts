import { Router } from 'express';
import type { z } from 'zod';
import type { ApiKeyRolled } from '../events';
import { keysOf } from '../projections/api-keys/queries';
import { hashKey } from '../projections/key-index/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { metaOf, settle } from './common';
import { displayPrefix, generateKeySecret, lastFour } from '../key-secrets';
import { workspaceCommand } from './workspace-routes';
import { validate } from '../../platform/http/contract';
import { keyRolled, rollKey } from './key-schemas';

/**
 * POST /v1/workspaces/:ws/keys/:keyId/roll {gracePeriodSeconds?}: a new secret for the same key
 * (id, name, scopes, budget, rate limit, usage). Any member may roll, as any member may delete:
 * rolling is how a leaked key is replaced. Not behind the usage-policy check, so a leak can
 * always be stopped.
 */
export function keyRollRoutes(s: Services): Router {
  const r = Router();

  r.post(rollKey.path, requireSession(s), requireMember(s), async (req, res) => {
    const {
      params: { keyId },
      body: { gracePeriodSeconds },
    } = validate(rollKey, req);
    const w = workspaceOf(res);
    const user = userOf(res);
    const secret = generateKeySecret();
    const now = s.now();
    const done = await workspaceCommand(
      s,
      w.workspaceId,
      {
        type: 'RollApiKey',
        data: {
          keyId,
          keyHash: hashKey(secret),
          prefix: displayPrefix(secret),
          last4: lastFour(secret),
          gracePeriodSeconds,
          now: now.toISOString(),
          by: user.userId,
        },
      },
      metaOf(res),
    );
    // The new secret works, and a secret rolled without grace fails, on the next request.
    await settle(s, done.appended);
    const rolled = done.events[0] as ApiKeyRolled;
    const key = (await keysOf(s.readModels, w.workspaceId)).find((k) => k.keyId === keyId);
    res
      .set('Cache-Control', 'no-store')
      .json({
        keyId,
        name: key?.name ?? null,
        scopes: key?.scopes ?? null,
        expiresAt: key?.expiresAt ?? null,
        prefix: rolled.data.prefix,
        last4: rolled.data.last4,
        rolledAt: now.toISOString(),
        gracePeriodSeconds,
        previousSecretValidUntil: rolled.data.previousKeyValidUntil,
        secret,
      } satisfies z.input<typeof keyRolled>);
  });

  return r;
}
