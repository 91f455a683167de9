import { usagePolicyOf } from '../../src/accounts/policy/policy-document';

/** The usage-policy version a test server serves by default (docs/USAGE-POLICY.md): signups send it. */
export const POLICY_VERSION = usagePolicyOf({}).version;
