import { z } from 'zod';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem, sessionErrors, sessionWriteErrors } from '../../platform/http/error-bodies';
import { emailSchema, memberErrors, memberWriteErrors, role, wsParams } from './fields';

/** The invitation routes' contracts: invite, list, revoke, and the invitee's list, accept and decline. */

export const invitationStatus = z.enum(['pending', 'accepted', 'declined', 'revoked']);
/** An invitation as a workspace's list, GET /v1/invitations and GET /v1/me show it. */
export const invitationView = z.object({
  invitationId: z.string(),
  workspaceId: z.string(),
  workspaceName: z.string().nullable(),
  email: z.string(),
  status: invitationStatus,
  invitedBy: z.object({ userId: z.string(), name: z.string().nullable(), email: z.string().nullable() }),
  created: z.string(),
});
export const invitationList = z.object({ invitations: z.array(invitationView) });
export const invitationSent = z.object({
  invitationId: z.string(),
  workspaceId: z.string(),
  email: z.string(),
  status: z.literal('pending'),
});
export const invitationAnswered = z.object({
  invitationId: z.string(),
  workspaceId: z.string(),
  workspaceName: z.string().nullable(),
  status: z.enum(['accepted', 'declined']),
  /** Only when accepted. */
  role: role.nullable().optional(),
});

export const inviteBody = z.object({ email: emailSchema });

export const invite = route({
  method: 'post',
  path: '/v1/workspaces/:ws/invitations',
  summary: 'Invite someone who has an account (admins)',
  description:
    'Invites an existing user by e-mail with a role; they see it in GET /v1/invitations and accept or decline it. Throttled per admin per hour.',
  tags: ['Invitations'],
  security: ['session'],
  params: wsParams,
  body: inviteBody,
  responses: {
    201: { description: 'The invitation', schema: invitationSent },
    ...memberWriteErrors,
    404: problem('Workspace not found, or no account uses the e-mail'),
    409: problem('Already a member, already invited, or a personal workspace'),
    422: invalidInput(),
    429: problem('Too many invitations sent (Retry-After)'),
  },
});

export const listWorkspaceInvitations = route({
  method: 'get',
  path: '/v1/workspaces/:ws/invitations',
  summary: 'A workspace’s pending invitations',
  description: 'Invitations sent and neither accepted, declined, revoked nor expired. Any member may read them.',
  tags: ['Invitations'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'Pending invitations', schema: invitationList }, ...memberErrors },
});

export const revokeInvitation = route({
  method: 'delete',
  path: '/v1/workspaces/:ws/invitations/:id',
  summary: 'Revoke a pending invitation (admins)',
  description: 'The invitation can no longer be accepted. 404 for one that is not pending in this workspace.',
  tags: ['Invitations'],
  security: ['session'],
  params: wsParams.extend({ id: z.string() }),
  responses: { 204: { description: 'Revoked' }, ...memberWriteErrors, 409: problem('The invitation was already answered or revoked') },
});

export const myInvitations = route({
  method: 'get',
  path: '/v1/invitations',
  summary: 'The caller’s pending invitations',
  description: "Invitations addressed to the caller's e-mail, across workspaces.",
  tags: ['Invitations'],
  security: ['session'],
  responses: { 200: { description: 'Pending invitations', schema: invitationList }, ...sessionErrors },
});

const answerInvitation = (action: 'accept' | 'decline') =>
  route({
    method: 'post',
    path: `/v1/invitations/:id/${action}`,
    summary: action === 'accept' ? 'Accept an invitation: join the workspace' : 'Decline an invitation',
    description:
      "The caller becomes a member with the role the invitation names. 404 for an invitation that is not the caller's or no longer pending.",
    tags: ['Invitations'],
    security: ['session'],
    params: z.object({ id: z.string() }),
    responses: {
      200: { description: action === 'accept' ? 'Accepted, with the role' : 'Declined', schema: invitationAnswered },
      ...sessionWriteErrors,
      404: problem('Invitation not found'),
      409: problem('The invitation was already answered or revoked'),
    },
  });
export const acceptInvitation = answerInvitation('accept');
export const declineInvitation = answerInvitation('decline');

export const invitationContracts: RouteContract[] = [
  invite,
  listWorkspaceInvitations,
  revokeInvitation,
  myInvitations,
  acceptInvitation,
  declineInvitation,
];
