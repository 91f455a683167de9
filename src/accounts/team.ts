import { conflict, DomainError, notFound } from '../platform/errors';
import { assertNever } from '../platform/event';
import type { ApiKeyRenamed, InvitationRevoked, MemberLeft, MemberRoleChanged, Role } from './events';
import { decideKeyBudget, decideMemberBudget, evolveBudget, type BudgetEvent, type SetMemberBudget } from './budgets';
import { cleanName, KEY_NAME_MAX, KEY_NAME_MIN, requireAdmin, roleOfActor, WorkspaceState } from './workspace-state';

/**
 * The workspace commands of issue 14: roles, revoking an invitation, leaving, and a key's name and
 * budget (./budgets.ts: periods, and a member's budget across their keys). Decided against the same workspace state as the rest (workspace.ts delegates here).
 *
 *   member ──ChangeMemberRole (actor admin; never demotes the last admin)──▶ member with the new role
 *   pending invitation ──RevokeInvitation (actor admin)──▶ revoked (accept/decline then 409)
 *   member ──LeaveWorkspace (the member; not the last admin, not a personal workspace)──▶ gone
 *   key ──UpdateApiKey (any member)──▶ ApiKeyRenamed and/or ApiKeyBudgetChangedV2 (nothing when unchanged)
 *   member ──SetMemberBudget (actor admin)──▶ MemberBudgetChanged (nothing when unchanged)
 */
export type TeamCommand =
  | { type: 'ChangeMemberRole'; data: { userId: string; role: Role; by: string } }
  | { type: 'RevokeInvitation'; data: { invitationId: string; by: string } }
  | { type: 'LeaveWorkspace'; data: { userId: string } }
  | {
      type: 'UpdateApiKey';
      data: {
        keyId: string;
        /** Absent: unchanged. */
        name?: string;
        /** Nano-USD integer string, null to remove the budget; absent: unchanged. */
        budgetNanoUsd?: string | null;
        /** daily | weekly | monthly; absent: unchanged (monthly for a new budget). */
        budgetPeriod?: string;
        by: string;
      };
    }
  | SetMemberBudget;

export type TeamEvent = MemberRoleChanged | InvitationRevoked | MemberLeft | BudgetEvent | ApiKeyRenamed;

const LAST_ADMIN = 'A workspace must keep at least one admin: this is its last admin';

const adminCount = (state: WorkspaceState) => [...state.members.values()].filter((r) => r === 'admin').length;

export function decideTeam(command: TeamCommand, state: WorkspaceState): TeamEvent[] {
  switch (command.type) {
    case 'ChangeMemberRole': {
      const d = command.data;
      requireAdmin(state, d.by);
      const current = state.members.get(d.userId);
      if (!current) throw notFound('Member not found');
      if (current === d.role) return [];
      if (current === 'admin' && adminCount(state) === 1) throw conflict(`${LAST_ADMIN}; promote another member first`);
      return [
        {
          type: 'MemberRoleChanged',
          data: { workspaceId: state.workspaceId, userId: d.userId, role: d.role, previousRole: current, by: d.by },
        },
      ];
    }
    case 'RevokeInvitation': {
      const d = command.data;
      requireAdmin(state, d.by);
      const inv = state.invitations.get(d.invitationId);
      if (!inv) throw notFound('Invitation not found');
      if (inv.status !== 'pending') throw conflict(`This invitation was already ${inv.status}`);
      return [
        {
          type: 'InvitationRevoked',
          data: { workspaceId: state.workspaceId, invitationId: inv.invitationId, email: inv.email, userId: inv.userId, by: d.by },
        },
      ];
    }
    case 'LeaveWorkspace': {
      const d = command.data;
      const role = roleOfActor(state, d.userId);
      if (state.personal) throw conflict('Nobody can leave their personal workspace');
      if (role === 'admin' && adminCount(state) === 1) throw conflict(`${LAST_ADMIN}; make another member an admin before leaving`);
      return [{ type: 'MemberLeft', data: { workspaceId: state.workspaceId, userId: d.userId } }];
    }
    case 'UpdateApiKey': {
      const d = command.data;
      roleOfActor(state, d.by);
      const key = state.keys.get(d.keyId);
      if (!key) throw notFound('API key not found');
      if (d.name === undefined && d.budgetNanoUsd === undefined && d.budgetPeriod === undefined) {
        throw new DomainError('unprocessable', 'Send name, budget, budgetPeriod or several');
      }
      const out: TeamEvent[] = [];
      if (d.name !== undefined) {
        const name = cleanName(d.name, 'A key name', KEY_NAME_MIN, KEY_NAME_MAX);
        if (name !== key.name)
          out.push({
            type: 'ApiKeyRenamed',
            data: { workspaceId: state.workspaceId, keyId: key.keyId, keyHash: key.keyHash, name, previousName: key.name, by: d.by },
          });
      }
      const change = {
        ...(d.budgetNanoUsd !== undefined ? { budgetNanoUsd: d.budgetNanoUsd } : {}),
        ...(d.budgetPeriod !== undefined ? { period: d.budgetPeriod } : {}),
      };
      out.push(...decideKeyBudget(state, key, change, d.by));
      return out;
    }
    case 'SetMemberBudget':
      return decideMemberBudget(state, command.data);
  }
}

/** The state changes of TeamEvents; the workspace decider's evolve hands them here. */
export function evolveTeam(state: WorkspaceState, e: TeamEvent): WorkspaceState {
  switch (e.type) {
    case 'MemberRoleChanged':
      if (!state.members.has(e.data.userId)) return state;
      return { ...state, members: new Map(state.members).set(e.data.userId, e.data.role) };
    case 'MemberLeft': {
      const members = new Map(state.members);
      members.delete(e.data.userId);
      return { ...state, members };
    }
    case 'InvitationRevoked': {
      const inv = state.invitations.get(e.data.invitationId);
      if (!inv) return state;
      return { ...state, invitations: new Map(state.invitations).set(inv.invitationId, { ...inv, status: 'revoked' }) };
    }
    case 'ApiKeyRenamed': {
      const key = state.keys.get(e.data.keyId);
      if (!key) return state;
      return { ...state, keys: new Map(state.keys).set(key.keyId, { ...key, name: e.data.name }) };
    }
    case 'ApiKeyBudgetChanged':
    case 'ApiKeyBudgetChangedV2':
    case 'MemberBudgetChanged':
      return evolveBudget(state, e);
    default:
      return assertNever(e);
  }
}
