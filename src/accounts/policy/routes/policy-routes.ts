import { Router } from 'express';
import type { z } from 'zod';
import type { Services } from '../../../services';
import { requireSession, userOf, metaOf } from '../../routes';
import { acceptPolicy } from '../usecases';
import { mount } from '../../../platform/http/mount';
import { policyStatus } from '../policy-status';
import { usagePolicyOf } from '../policy-document';
import { acceptPolicyFor, policyStatusBody, usagePolicy, usagePolicyBody } from './policy-schemas';

/** The portal page that shows the rules. */
export const USAGE_POLICY_PAGE = '/usage-policy';

/** GET /v1/policies/usage (anyone), POST /v1/policies/usage/accept {version} (a user). */
export function policyRoutes(s: Services): Router {
  const r = Router();
  const policy = usagePolicyOf(s.config);
  const accept = acceptPolicyFor(policy.version);

  mount(r, usagePolicy, (_req, res) => {
    res.set('Cache-Control', 'no-cache').json({ ...policy, page: USAGE_POLICY_PAGE } satisfies z.input<typeof usagePolicyBody>);
  });

  mount(r, accept, requireSession(s), async (_req, res, { body: { version } }) => {
    const user = userOf(res);
    await acceptPolicy(s, { userId: user.userId, version, metadata: metaOf(res) });
    res.json((await policyStatus(s, user.userId)) satisfies z.input<typeof policyStatusBody>);
  });

  return r;
}
