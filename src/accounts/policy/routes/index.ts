/** The policy route kit other areas' routes use: the acceptance check and the policy fields of a contract. */
export { policyStatus, requireAcceptedPolicy } from '../policy-status';
export { currentVersionField, policyStatusBody, versionField } from './policy-schemas';
