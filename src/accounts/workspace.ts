import { conflict, notFound } from '../platform/errors';
import type {
  InvitationAccepted,
  InvitationDeclined,
  InvitationSent,
  MemberJoined,
  MemberRemoved,
  WorkspaceCreated,
  WorkspaceEvent,
  WorkspaceRenamed,
} from './events';
import { assertNever, type EventRecord } from '../platform/event';
import { normalizeEmail } from './user';
import { decideTeam, evolveTeam, type TeamCommand, type TeamEvent } from './team';
import { decideApiKey, type ApiKeyCommand, type ApiKeyEvent } from './api-keys';
import { cleanName, requireAdmin, WORKSPACE_NAME_MAX, type InvitationStatus, type WorkspaceState } from './workspace-state';

/**
 * The workspace aggregate (stream `workspace-{wsId}`): its name, members, invitations and API keys.
 *
 * Invitation state machine (per invitation):
 *   (none) ──InviteMember (actor admin, invitee has an account, not a member, not personal)──▶ pending
 *   pending ──AcceptInvitation (the invitee)──▶ accepted (+ MemberJoined as member)
 *   pending ──DeclineInvitation (the invitee)──▶ declined
 * Membership: member ──RemoveMember (actor admin; never the last admin)──▶ removed.
 * API keys (create, delete, roll, rate limit): see api-keys.ts. Roles, revoking, leaving and a
 * key's name and budget: see team.ts. Every other transition throws a DomainError and appends nothing.
 */

export * from './workspace-state';
export { fundingShortfall, ROLL_GRACE_MAX_SECONDS, type ApiKeyCommand, type Funding, type RollApiKey } from './api-keys';

export type WorkspaceCommand =
  | { type: 'CreateWorkspace'; data: { workspaceId: string; name: string; personal: boolean; by: string } }
  /** The first login's personal workspace: creates it unless it exists (then nothing happens). */
  | { type: 'EnsurePersonalWorkspace'; data: { workspaceId: string; name: string; by: string } }
  | { type: 'RenameWorkspace'; data: { name: string; by: string } }
  | { type: 'InviteMember'; data: { invitationId: string; email: string; inviteeUserId: string; by: string } }
  | { type: 'AcceptInvitation'; data: { invitationId: string; userId: string } }
  | { type: 'DeclineInvitation'; data: { invitationId: string; userId: string } }
  | { type: 'RemoveMember'; data: { userId: string; by: string } }
  | ApiKeyCommand
  | TeamCommand;

export const workspaceDecider = {
  initial: (): WorkspaceState => ({
    exists: false,
    workspaceId: '',
    name: '',
    personal: false,
    createdBy: '',
    members: new Map(),
    invitations: new Map(),
    keys: new Map(),
    memberBudgets: new Map(),
  }),
  evolve(state: WorkspaceState, e: EventRecord<WorkspaceEvent>): WorkspaceState {
    switch (e.type) {
      case 'MemberRoleChanged':
      case 'InvitationRevoked':
      case 'MemberLeft':
      case 'ApiKeyBudgetChanged':
      case 'ApiKeyBudgetChangedV2':
      case 'MemberBudgetChanged':
      case 'ApiKeyRenamed':
        return evolveTeam(state, e);
      case 'WorkspaceCreated':
        return {
          ...state,
          exists: true,
          workspaceId: e.data.workspaceId,
          name: e.data.name,
          personal: e.data.personal,
          createdBy: e.data.createdBy,
        };
      case 'WorkspaceRenamed':
        return { ...state, name: e.data.name };
      case 'MemberJoined':
        return { ...state, members: new Map(state.members).set(e.data.userId, e.data.role) };
      case 'MemberRemoved': {
        const members = new Map(state.members);
        members.delete(e.data.userId);
        return { ...state, members };
      }
      case 'InvitationSent':
        return {
          ...state,
          invitations: new Map(state.invitations).set(e.data.invitationId, {
            invitationId: e.data.invitationId,
            email: e.data.email,
            userId: e.data.userId,
            invitedBy: e.data.invitedBy,
            status: 'pending',
          }),
        };
      case 'InvitationAccepted':
      case 'InvitationDeclined': {
        const inv = state.invitations.get(e.data.invitationId);
        if (!inv) return state;
        const status: InvitationStatus = e.type === 'InvitationAccepted' ? 'accepted' : 'declined';
        return { ...state, invitations: new Map(state.invitations).set(inv.invitationId, { ...inv, status }) };
      }
      case 'ApiKeyCreated':
        return {
          ...state,
          keys: new Map(state.keys).set(e.data.keyId, {
            keyId: e.data.keyId,
            keyHash: e.data.keyHash,
            name: e.data.name,
            expiresAt: e.data.expiresAt,
            createdBy: e.data.createdBy,
            budget: null,
          }),
        };
      case 'ApiKeyRolled': {
        const key = state.keys.get(e.data.keyId);
        if (!key) return state;
        return { ...state, keys: new Map(state.keys).set(key.keyId, { ...key, keyHash: e.data.keyHash }) };
      }
      case 'ApiKeyDeleted': {
        const keys = new Map(state.keys);
        keys.delete(e.data.keyId);
        return { ...state, keys };
      }
      case 'RateLimitChanged': // the key index's concern, not the aggregate's
        return state;
      default:
        return assertNever(e);
    }
  },
};

type Out =
  | WorkspaceCreated
  | WorkspaceRenamed
  | MemberJoined
  | InvitationSent
  | InvitationAccepted
  | InvitationDeclined
  | MemberRemoved
  | ApiKeyEvent
  | TeamEvent;

export function decideWorkspace(command: WorkspaceCommand, state: WorkspaceState): Out[] {
  switch (command.type) {
    case 'CreateWorkspace':
    case 'EnsurePersonalWorkspace': {
      const d = command.data;
      if (state.exists) {
        if (command.type === 'EnsurePersonalWorkspace') return [];
        throw conflict('This workspace already exists');
      }
      const personal = command.type === 'EnsurePersonalWorkspace' ? true : command.data.personal;
      return [
        {
          type: 'WorkspaceCreated',
          data: {
            workspaceId: d.workspaceId,
            name: cleanName(d.name, 'A workspace name', 1, WORKSPACE_NAME_MAX),
            personal,
            createdBy: d.by,
          },
        },
        { type: 'MemberJoined', data: { workspaceId: d.workspaceId, userId: d.by, role: 'admin' } },
      ];
    }
    case 'RenameWorkspace': {
      const d = command.data;
      requireAdmin(state, d.by);
      const name = cleanName(d.name, 'A workspace name', 1, WORKSPACE_NAME_MAX);
      if (name === state.name) return [];
      return [{ type: 'WorkspaceRenamed', data: { workspaceId: state.workspaceId, name, by: d.by } }];
    }
    case 'InviteMember': {
      const d = command.data;
      requireAdmin(state, d.by);
      const email = normalizeEmail(d.email);
      if (state.personal) throw conflict('A personal workspace cannot have other members: create a workspace to invite people');
      if (state.members.has(d.inviteeUserId)) throw conflict(`${email} is already a member of this workspace`);
      for (const inv of state.invitations.values()) {
        if (inv.status === 'pending' && inv.userId === d.inviteeUserId)
          throw conflict(`${email} already has a pending invitation to this workspace`);
      }
      if (state.invitations.has(d.invitationId)) throw conflict('This invitation already exists');
      return [
        {
          type: 'InvitationSent',
          data: { workspaceId: state.workspaceId, invitationId: d.invitationId, email, userId: d.inviteeUserId, invitedBy: d.by },
        },
      ];
    }
    case 'AcceptInvitation':
    case 'DeclineInvitation': {
      const d = command.data;
      const inv = state.invitations.get(d.invitationId);
      // Someone else's invitation is as invisible as a missing one.
      if (!state.exists || !inv || inv.userId !== d.userId) throw notFound('Invitation not found');
      if (inv.status !== 'pending') throw conflict(`This invitation was already ${inv.status}`);
      if (command.type === 'DeclineInvitation') {
        return [{ type: 'InvitationDeclined', data: { workspaceId: state.workspaceId, invitationId: inv.invitationId, userId: d.userId } }];
      }
      const accepted: Out = {
        type: 'InvitationAccepted',
        data: { workspaceId: state.workspaceId, invitationId: inv.invitationId, userId: d.userId },
      };
      // Already a member some other way: the invitation is answered, the role unchanged.
      if (state.members.has(d.userId)) return [accepted];
      return [accepted, { type: 'MemberJoined', data: { workspaceId: state.workspaceId, userId: d.userId, role: 'member' } }];
    }
    case 'RemoveMember': {
      const d = command.data;
      requireAdmin(state, d.by);
      const role = state.members.get(d.userId);
      if (!role) throw notFound('Member not found');
      if (state.personal) throw conflict('The owner of a personal workspace cannot be removed from it');
      if (role === 'admin' && [...state.members.values()].filter((r) => r === 'admin').length === 1) {
        throw conflict('A workspace must keep at least one admin: this is its last admin');
      }
      return [{ type: 'MemberRemoved', data: { workspaceId: state.workspaceId, userId: d.userId, by: d.by } }];
    }
    case 'CreateApiKey':
    case 'DeleteApiKey':
    case 'RollApiKey':
    case 'ChangeRateLimit':
      return decideApiKey(command, state);
    case 'ChangeMemberRole':
    case 'RevokeInvitation':
    case 'LeaveWorkspace':
    case 'UpdateApiKey':
    case 'SetMemberBudget':
      return decideTeam(command, state);
  }
}
