import { DomainError, forbidden, notFound } from '../platform/errors';
import type { BudgetPeriod } from '../platform/budget-periods';
import type { Role } from './events';

/** The workspace's state and the checks both workspace.ts and team.ts decide with. */

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked';

export interface InvitationState {
  invitationId: string;
  email: string;
  userId: string;
  invitedBy: string;
  status: InvitationStatus;
}

export interface KeyState {
  keyId: string;
  keyHash: string;
  name: string;
  expiresAt: string | null;
  /** Who created it: the member whose budget its spend counts against. */
  createdBy: string;
  /** Nano-USD a period, or null for no budget (ApiKeyBudgetChanged: monthly; ApiKeyBudgetChangedV2). */
  budget: Budget | null;
}

/** A spend cap: nano-USD (integer string) per period. */
export interface Budget {
  nanoUsd: string;
  period: BudgetPeriod;
}

export interface WorkspaceState {
  exists: boolean;
  workspaceId: string;
  name: string;
  personal: boolean;
  createdBy: string;
  members: ReadonlyMap<string, Role>;
  invitations: ReadonlyMap<string, InvitationState>;
  /** Live keys only: a deleted key is gone. */
  keys: ReadonlyMap<string, KeyState>;
  /** Member budgets by user id (MemberBudgetChanged); a member without one is absent. */
  memberBudgets: ReadonlyMap<string, Budget>;
}

export const WORKSPACE_NAME_MAX = 100;
export const KEY_NAME_MIN = 3;
export const KEY_NAME_MAX = 64;

const WORKSPACE_NOT_FOUND = 'Workspace not found';

/** The actor's role; a non-member (or a missing workspace) sees a 404, so ids cannot be probed. */
export function roleOfActor(state: WorkspaceState, userId: string): Role {
  const role = state.exists ? state.members.get(userId) : undefined;
  if (!role) throw notFound(WORKSPACE_NOT_FOUND);
  return role;
}

export function requireAdmin(state: WorkspaceState, userId: string): void {
  if (roleOfActor(state, userId) !== 'admin') throw forbidden();
}

export function cleanName(name: string, what: string, min: number, max: number): string {
  const n = name.trim();
  if (n.length < min || n.length > max) throw new DomainError('unprocessable', `${what} must be ${min} to ${max} characters long`);
  return n;
}
