import { Router } from 'express';
import type { z } from 'zod';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { metaOf } from './common';
import * as uc from '../usecases';
import { mount } from '../../platform/http/mount';
import { keyRolled, rollKey } from './key-schemas';

/**
 * POST /v1/workspaces/:ws/keys/:keyId/roll {gracePeriodSeconds?}: a new secret for the same key
 * (id, name, scopes, budget, rate limit, usage). The key's creator or an admin may roll it (403 for
 * other members: their budget would not follow the secret). Not behind the usage-policy check, so a
 * leak can always be stopped.
 */
export function keyRollRoutes(s: Services): Router {
  const r = Router();

  mount(r, rollKey, requireSession(s), requireMember(s), async (_req, res, { params: { keyId }, body: { gracePeriodSeconds } }) => {
    const now = s.now();
    const { secret, rolled, key } = await uc.rollKey(s, {
      workspaceId: workspaceOf(res).workspaceId,
      keyId,
      gracePeriodSeconds,
      by: userOf(res).userId,
      now,
      metadata: metaOf(res),
    });
    res.set('Cache-Control', 'no-store').json({
      keyId,
      name: key?.name ?? null,
      scopes: key?.scopes ?? null,
      expiresAt: key?.expiresAt ?? null,
      prefix: rolled.prefix,
      last4: rolled.last4,
      rolledAt: now.toISOString(),
      gracePeriodSeconds,
      previousSecretValidUntil: rolled.previousKeyValidUntil,
      secret,
    } satisfies z.input<typeof keyRolled>);
  });

  return r;
}
