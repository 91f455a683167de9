/**
 * The API's payload shapes as the portal reads them (docs/BILLING.md, docs/ACCOUNTS.md). Declared by hand for now; kept in
 * one file so they can be replaced by types derived from the server's schemas. (The session's shapes, /v1/me and /portal/config.json, stay in model.ts beside their normalisers.)
 */

/** GET /v1/workspaces/:ws/billing (docs/BILLING.md). Amounts are USD decimal strings. */
export interface Billing {
  mode: 'stripe' | 'sandbox';
  modeNote?: string;
  balance: string;
  reserved: string;
  available: string;
  deposited: string;
  spent: string;
  funded: boolean;
  initialDeposit: string;
  minimumDeposit: string;
  paymentMethod: { id: string; brand: string; last4: string } | null;
  autoReload: {
    enabled: boolean;
    threshold: string;
    amount: string;
    monthlyCap: string | null;
    status: 'disabled' | 'active' | 'reloading' | 'suspended';
    suspendedReason: string | null;
    suspendedAt: string | null;
    reloadedThisMonth: string;
  } | null;
}

export interface LedgerEntry {
  position: string;
  at: string;
  type: 'DepositSucceeded' | 'AutoReloadSucceeded' | 'TokensDebited' | string;
  ref: string;
  amount: string;
  balance: string;
  keyId?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
}

export interface LedgerPage {
  entries: LedgerEntry[];
  total: number;
  nextCursor: string | null;
}

/** GET /portal/workspaces/:ws/requests/:requestId: one call's tokens and cost (its TokensDebited event). */
export interface CallUsage {
  requestId: string;
  inputTokens: number;
  outputTokens: number;
  cost: string;
}

/** GET /v1/workspaces/:ws/members (docs/ACCOUNTS.md). */
export interface Member {
  userId: string;
  email: string | null;
  name: string | null;
  role: 'admin' | 'member';
  joined: string | null;
}

/** GET /v1/workspaces/:ws/invitations. */
export interface SentInvitation {
  invitationId: string;
  email: string;
  created?: string;
  invitedBy?: { name: string | null; email: string | null };
}
