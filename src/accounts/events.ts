import type { Event } from '../platform/event';
import type { BudgetPeriod } from '../platform/budget-periods';

/**
 * Events of the `user-{id}`, `email-{sha256}` and `workspace-{id}` streams. These shapes are a
 * contract with every projection and with finance: never edit one in place, add a V2.
 */
export type UserRegistered = Event<'UserRegistered', { userId: string; email: string; name: string; passwordHash: string }>;
export type UserLoggedIn = Event<'UserLoggedIn', { userId: string }>;
export type EmailClaimed = Event<'EmailClaimed', { email: string; userId: string }>;
/**
 * The person was erased (docs/SECURITY.md): their data key is destroyed, so every personal field
 * of their events reads as erased. `by`: the user themself, or `operator`.
 */
export type UserErased = Event<'UserErased', { userId: string; by: string }>;
/** The claim's owner was erased: the address may be registered again. */
export type EmailReleased = Event<'EmailReleased', { userId: string }>;

export type Role = 'admin' | 'member';

export type WorkspaceCreated = Event<'WorkspaceCreated', { workspaceId: string; name: string; personal: boolean; createdBy: string }>;
export type WorkspaceRenamed = Event<'WorkspaceRenamed', { workspaceId: string; name: string; by: string }>;
export type MemberJoined = Event<'MemberJoined', { workspaceId: string; userId: string; role: Role }>;
export type InvitationSent = Event<
  'InvitationSent',
  { workspaceId: string; invitationId: string; email: string; userId: string; invitedBy: string }
>;
export type InvitationAccepted = Event<'InvitationAccepted', { workspaceId: string; invitationId: string; userId: string }>;
export type InvitationDeclined = Event<'InvitationDeclined', { workspaceId: string; invitationId: string; userId: string }>;
export type MemberRemoved = Event<'MemberRemoved', { workspaceId: string; userId: string; by: string }>;

/** The key's secret is never in an event: only its SHA-256 (hex), a display prefix and last 4. */
export type ApiKeyCreated = Event<
  'ApiKeyCreated',
  {
    workspaceId: string;
    keyId: string;
    name: string;
    keyHash: string;
    prefix: string;
    last4: string;
    scopes: string[];
    /** ISO-8601, or null for a key that never expires. */
    expiresAt: string | null;
    createdBy: string;
  }
>;
export type ApiKeyDeleted = Event<'ApiKeyDeleted', { workspaceId: string; keyId: string; keyHash: string; by: string }>;
/** An operator raised (or reset, with null) a key's request rate. */
export type RateLimitChanged = Event<
  'RateLimitChanged',
  { workspaceId: string; keyId: string; keyHash: string; requestsPerMinute: number | null; by: string }
>;

/**
 * A key got a new secret (its id, name, scopes, budget and rate limit stay). The previous secret
 * works until `previousKeyValidUntil` (ISO; the roll's own time when the grace period is 0).
 */
export type ApiKeyRolled = Event<
  'ApiKeyRolled',
  {
    workspaceId: string;
    keyId: string;
    keyHash: string;
    prefix: string;
    last4: string;
    previousKeyHash: string;
    gracePeriodSeconds: number;
    previousKeyValidUntil: string;
    by: string;
  }
>;
/** An admin promoted or demoted a member (issue 14). */
export type MemberRoleChanged = Event<
  'MemberRoleChanged',
  { workspaceId: string; userId: string; role: Role; previousRole: Role; by: string }
>;
/** An admin took back a pending invitation; the invitee can no longer accept or decline it. */
export type InvitationRevoked = Event<
  'InvitationRevoked',
  { workspaceId: string; invitationId: string; email: string; userId: string; by: string }
>;
/** A member left a team workspace of their own accord; the keys they created stay with it. */
export type MemberLeft = Event<'MemberLeft', { workspaceId: string; userId: string }>;
/**
 * A key's monthly (UTC calendar month) spend cap in nano-USD, or null for none. Released before
 * budgets had periods: still read (as a monthly budget), no longer written (ApiKeyBudgetChangedV2).
 */
export type ApiKeyBudgetChanged = Event<
  'ApiKeyBudgetChanged',
  { workspaceId: string; keyId: string; monthlyBudgetNanoUsd: string | null; previousBudgetNanoUsd: string | null; by: string }
>;
/**
 * A key's spend cap in nano-USD per period (UTC day, week from Monday, or calendar month), or null
 * (and period null) for none. `previous…` is what it replaced (an ApiKeyBudgetChanged's budget reads
 * as monthly).
 */
export type ApiKeyBudgetChangedV2 = Event<
  'ApiKeyBudgetChangedV2',
  {
    workspaceId: string;
    keyId: string;
    budgetNanoUsd: string | null;
    period: BudgetPeriod | null;
    previousBudgetNanoUsd: string | null;
    previousPeriod: BudgetPeriod | null;
    by: string;
  }
>;
/**
 * An admin capped what one member's keys (the keys they created) may spend together per period,
 * nano-USD; null (and period null) removes the cap.
 */
export type MemberBudgetChanged = Event<
  'MemberBudgetChanged',
  {
    workspaceId: string;
    userId: string;
    budgetNanoUsd: string | null;
    period: BudgetPeriod | null;
    previousBudgetNanoUsd: string | null;
    previousPeriod: BudgetPeriod | null;
    by: string;
  }
>;
/** keyHash addresses the key index's record (never shown anywhere). */
export type ApiKeyRenamed = Event<
  'ApiKeyRenamed',
  { workspaceId: string; keyId: string; keyHash: string; name: string; previousName: string; by: string }
>;

export type WorkspaceEvent =
  | WorkspaceCreated
  | WorkspaceRenamed
  | MemberJoined
  | InvitationSent
  | InvitationAccepted
  | InvitationDeclined
  | MemberRemoved
  | ApiKeyCreated
  | ApiKeyDeleted
  | RateLimitChanged
  | MemberRoleChanged
  | InvitationRevoked
  | MemberLeft
  | ApiKeyBudgetChanged
  | ApiKeyBudgetChangedV2
  | MemberBudgetChanged
  | ApiKeyRenamed
  | ApiKeyRolled;
