import type { RequestHandler } from 'express';
import type { z } from 'zod';
import { acceptanceOf } from './projections/policy-acceptance/queries';
import type { Services } from '../../services';
import { HttpError } from '../../platform/http/middleware/errors';
import { userOf } from '../routes';
import { usagePolicyOf } from './policy-document';
import type { policyStatusBody } from './routes/policy-schemas';

export type PolicyStatus = z.output<typeof policyStatusBody>;

export async function policyStatus(s: Services, userId: string): Promise<PolicyStatus> {
  const policy = usagePolicyOf(s.config);
  const acc = await acceptanceOf(s.readModels, userId);
  const accepted = acc?.version === policy.version;
  return {
    currentVersion: policy.version,
    effectiveDate: policy.effectiveDate,
    acceptedVersion: acc?.version ?? null,
    acceptedAt: acc?.accepted ?? null,
    accepted,
    detail: accepted ? null : notAcceptedDetail(policy.version, policy.effectiveDate, acc?.version ?? null),
  };
}

function notAcceptedDetail(current: string, effective: string, accepted: string | null): string {
  const what = accepted
    ? `The usage policy changed (version ${current}, effective ${effective}; you accepted version ${accepted}).`
    : `You have not accepted the usage policy (version ${current}, effective ${effective}).`;
  return `${what} Read it at GET /v1/policies/usage (the portal's /usage-policy page) and accept it with POST /v1/policies/usage/accept {"version": "${current}"} before creating API keys.`;
}

/** After requireSession: 403 until the user accepted the current usage policy. */
export function requireAcceptedPolicy(s: Services): RequestHandler {
  return async (_req, res, next) => {
    const status = await policyStatus(s, userOf(res).userId);
    if (!status.accepted) throw new HttpError(403, status.detail);
    next();
  };
}
