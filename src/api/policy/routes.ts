import { Router } from 'express';
import { z } from 'zod';
import { acceptanceDecider, decideAcceptPolicy } from '../../domain/policy/acceptance';
import { streams } from '../../domain/streams';
import { handleCommand } from '../../eventstore/command-handler';
import type { Services } from '../../services';
import { requireSession, userOf } from '../accounts/access';
import { metaOf, settle } from '../accounts/common';
import { currentVersionField, policyStatus } from './acceptance';
import { usagePolicyOf } from './document';

/** The portal page that shows the rules. */
export const USAGE_POLICY_PAGE = '/usage-policy';

/** GET /v1/policies/usage (anyone), POST /v1/policies/usage/accept {version} (a user). */
export function policyRoutes(s: Services): Router {
  const r = Router();
  const policy = usagePolicyOf(s.config);
  const acceptBody = z.object({ version: currentVersionField(policy.version) });

  r.get('/v1/policies/usage', (_req, res) => {
    res.set('Cache-Control', 'no-cache').json({ ...policy, page: USAGE_POLICY_PAGE });
  });

  r.post('/v1/policies/usage/accept', requireSession(s), async (req, res) => {
    const { version } = acceptBody.parse(req.body ?? {});
    const user = userOf(res);
    const done = await handleCommand(
      s.store,
      streams.user(user.userId),
      acceptanceDecider,
      (st) => ({ events: decideAcceptPolicy(st, { userId: user.userId, version, currentVersion: policy.version }), result: undefined }),
      { metadata: metaOf(res), newId: s.newId },
    );
    // The next key creation must see the acceptance.
    await settle(s, done.appended);
    res.json(await policyStatus(s, user.userId));
  });

  return r;
}
