import { z } from 'zod';
import { route, type RouteContract } from '../../../platform/http/contract';
import { invalidInput, problem, sessionWriteErrors, transportErrors } from '../../../platform/http/error-bodies';

/** The policy area's route contracts: request and response schemas, and the list the OpenAPI document is built from. */

/**
 * A body field that must equal the current usage-policy version (signup's acceptedPolicyVersion,
 * accept's version). Missing or different: 422 naming the field and the current version.
 */
export const currentVersionField = (current: string) =>
  z
    .unknown()
    .refine((v) => v === current, { message: `must be the current usage policy version, "${current}" (see GET /v1/policies/usage)` })
    .transform(() => current);

/** How the documents show a field checked by currentVersionField. */
export const versionField = z.string().describe('The current usage policy version (GET /v1/policies/usage)');

export const usagePolicyBody = z.object({
  version: z.string(),
  /** YYYY-MM-DD */
  effectiveDate: z.string(),
  rules: z.array(z.object({ number: z.number(), title: z.string(), text: z.string() })),
  /** The portal page that shows the rules. */
  page: z.string(),
});

export const policyStatusBody = z.object({
  currentVersion: z.string(),
  effectiveDate: z.string(),
  acceptedVersion: z.string().nullable(),
  acceptedAt: z.string().nullable(),
  /** True when the user accepted the current version. */
  accepted: z.boolean(),
  /** What to do, when not accepted. */
  detail: z.string().nullable(),
});

export const usagePolicy = route({
  method: 'get',
  path: '/v1/policies/usage',
  summary: 'The usage policy in force: its version, effective date and rules',
  description: 'Public. Signup and key creation need the version this answers.',
  tags: ['Policy'],
  security: [],
  responses: { 200: { description: 'The policy', schema: usagePolicyBody }, ...transportErrors },
});

export const acceptPolicy = route({
  method: 'post',
  path: '/v1/policies/usage/accept',
  summary: 'Accept the current usage policy (needed before creating API keys)',
  description: 'Records that the caller accepted the version in force; 422 for a version that is not the current one.',
  tags: ['Policy'],
  security: ['session'],
  body: z.object({ version: versionField }),
  responses: {
    200: { description: 'The caller’s acceptance status', schema: policyStatusBody },
    ...sessionWriteErrors,
    404: problem('User not found'),
    422: invalidInput('version is not the current version'),
  },
});

/** The accept contract this process checks: version must be `currentVersion`. */
export const acceptPolicyFor = (currentVersion: string) => ({
  ...acceptPolicy,
  body: z.object({ version: currentVersionField(currentVersion) }),
});

export const routes: RouteContract[] = [usagePolicy, acceptPolicy];
