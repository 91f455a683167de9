/**
 * What other areas may use of policy; its events are in ./events.ts. Nothing here loads the HTTP
 * side: the acceptance check a route runs is ./routes/index.ts.
 */
export { policyAccepted } from './acceptance';
export { usagePolicyOf } from './policy-document';
