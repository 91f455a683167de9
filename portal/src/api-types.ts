/**
 * The /v1 API's payload shapes, taken from the server's route contracts (src/{accounts,billing,policy}/routes/*-schemas.ts):
 * the zod schemas that check and document each answer also type what the portal reads, so a field renamed on
 * the server fails `npm run typecheck` here. `import type` only: nothing of the server reaches the bundle.
 */
import type { z } from 'zod';
import type { receiptBody } from '../../src/inference/routes/caller-schemas';
import type {
  auditEntry,
  auditPageBody,
  invitationView,
  keyCreated,
  keyList,
  keyRolled,
  keyView,
  invitationList,
  member,
  memberList,
  meView,
  notice,
  role,
  userView,
  workspaceSummary,
} from '../../src/accounts/routes/schemas';
import type {
  billingViewBody,
  creditGrantView,
  depositPending,
  depositSucceeded,
  ledgerEntryView,
  ledgerPageBody,
  usageBody,
  usagePoint,
} from '../../src/billing/routes/billing-schemas';
import type { policyStatusBody, usagePolicyBody } from '../../src/accounts/policy/routes/policy-schemas';
import type { statementBody, statementMonthsBody } from '../../src/billing/routes/statement-schemas';
import type { deliveryBody, endpointBody, endpointWithSecretBody, replayBody } from '../../src/webhooks/routes/webhook-schemas';

// GET /v1/me and the session
export type Role = z.output<typeof role>;
export type User = z.output<typeof userView>;
export type Workspace = z.output<typeof workspaceSummary>;
export type Invitation = z.output<typeof invitationView>;
export type Notice = z.output<typeof notice>;
export type Me = z.output<typeof meView>;

// Workspace page: GET …/members and GET …/invitations (pending invitations the workspace sent)
export type Member = z.output<typeof member>;
export type MemberList = z.output<typeof memberList>;
export type SentInvitation = z.output<typeof invitationView>;
export type InvitationList = z.output<typeof invitationList>;

// Keys: GET …/keys, POST …/keys/:keyId/roll
export type ApiKey = z.output<typeof keyView>;
export type KeyList = z.output<typeof keyList>;
/** POST …/keys: the new key with its secret, shown this once. */
export type CreatedKey = z.output<typeof keyCreated>;
export type RolledKey = z.output<typeof keyRolled>;

// Billing: GET …/billing and GET …/billing/ledger. Amounts are USD decimal strings.
export type Billing = z.output<typeof billingViewBody>;
export type LedgerEntry = z.output<typeof ledgerEntryView>;
export type LedgerPage = z.output<typeof ledgerPageBody>;
export type CreditGrant = z.output<typeof creditGrantView>;
// Monthly statements: GET …/statements, …/statements/:month
export type Statement = z.output<typeof statementBody>;
export type StatementMonths = z.output<typeof statementMonthsBody>;
/** POST …/billing/deposits' 2xx answers: 201 succeeded, 202 pending (a failed charge is 402, an error). */
export type DepositAnswer = z.output<typeof depositSucceeded> | z.output<typeof depositPending>;

// Usage: GET …/usage
export type Usage = z.output<typeof usageBody>;
export type ApiUsagePoint = z.output<typeof usagePoint>;

// Audit: GET …/audit
export type AuditEntry = z.output<typeof auditEntry>;
export type AuditPage = z.output<typeof auditPageBody>;

// Usage policy: GET /v1/policies/usage, and the user's standing (GET /v1/me, POST …/accept)
export type UsagePolicy = z.output<typeof usagePolicyBody>;
export type PolicyStatus = z.output<typeof policyStatusBody>;

/**
 * GET /portal/workspaces/:ws/requests/:requestId: one call's tokens and cost (its TokensDebited event). A
 * portal route, not /v1: declared here until its own contract exists (src/portal).
 */
export interface CallUsage {
  requestId: string;
  inputTokens: number;
  outputTokens: number;
  cost: string;
}

// A request's receipt: GET /v1/workspaces/:ws/requests/:requestId (src/inference/routes/caller-schemas.ts)
export type RequestReceipt = z.output<typeof receiptBody>;

// Webhooks (admins): GET …/webhooks, …/deliveries, …/replays (src/webhooks/routes/webhook-schemas.ts)
export type WebhookEndpoint = z.output<typeof endpointBody>;
export type WebhookEndpointWithSecret = z.output<typeof endpointWithSecretBody>;
export type WebhookDelivery = z.output<typeof deliveryBody>;
export type WebhookReplay = z.output<typeof replayBody>;
export interface WebhookList {
  endpoints: WebhookEndpoint[];
  eventTypes: string[];
  balanceThreshold: string | null;
}
