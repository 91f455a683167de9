import { z } from 'zod';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem, sessionErrors, sessionWriteErrors } from '../../platform/http/error-bodies';
import { currentVersionField, policyStatusBody, versionField } from '../policy/routes';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../sessions/passwords';
import { auditContracts } from './audit-schemas';
import { emailSchema, memberErrors, memberWriteErrors, nameSchema, role, workspaceNameSchema, wsParams } from './fields';
import { invitationContracts, invitationView } from './invitation-schemas';
import { keyContracts } from './key-schemas';
import { personalDataContracts } from './personal-data-schemas';
import { memberBudgetView, setMemberBudget } from './member-budget-schemas';

export { emailSchema, nameSchema, role, workspaceNameSchema, wsParams };
// One entry point for the area's schemas (the portal takes its types from here).
export * from './audit-schemas';
export * from './invitation-schemas';
export * from './key-schemas';
export * from './personal-data-schemas';

/**
 * The accounts area's route contracts (users, sessions, workspaces and members here; invitations,
 * keys and the audit log in invitation-schemas.ts, key-schemas.ts and audit-schemas.ts): request
 * and response schemas, and the list `routes` the OpenAPI document is built from.
 */

// ---- responses ----------------------------------------------------------------------------------

export const userView = z.object({ userId: z.string(), email: z.string(), name: z.string() });

export const workspaceSummary = z.object({ workspaceId: z.string(), name: z.string(), role, personal: z.boolean() });
export const workspaceView = workspaceSummary.extend({ created: z.string().nullable() });
export const workspaceList = z.object({ workspaces: z.array(workspaceSummary.extend({ created: z.string() })) });

export const member = z.object({
  userId: z.string(),
  email: z.string().nullable(),
  name: z.string().nullable(),
  role,
  joined: z.string().nullable(),
  budget: memberBudgetView.nullable().describe('What the keys this member created may spend together per period; null: no member budget'),
});
export const memberList = z.object({ members: z.array(member) });

export const notice = z.object({
  id: z.string(),
  kind: z.string(),
  message: z.string(),
  workspaceId: z.string().optional(),
  audience: z.enum(['admins', 'members']).optional(),
  created: z.string(),
  /** An auto-reload suspension's notice names the reload that was declined. */
  reloadId: z.string().optional(),
});

export const meView = z.object({
  user: userView,
  workspaces: z.array(workspaceSummary),
  invitations: z.array(invitationView),
  notices: z.array(notice),
  usagePolicy: policyStatusBody,
});

export const roleChanged = z.object({ workspaceId: z.string(), userId: z.string(), role });

export const loggedIn = z.object({ sessionToken: z.string(), expiresIn: z.number(), user: userView, firstLogin: z.boolean() });

// ---- requests -----------------------------------------------------------------------------------

const signupFields = {
  email: emailSchema,
  password: z
    .string()
    .min(PASSWORD_MIN_LENGTH, `A password must be at least ${PASSWORD_MIN_LENGTH} characters long`)
    .max(PASSWORD_MAX_LENGTH, `A password must be at most ${PASSWORD_MAX_LENGTH} characters long`),
  name: nameSchema('name', { min: 1, max: 100, label: 'a name' }),
};
/** As documented; the route checks acceptedPolicyVersion against the version it serves (signupFor). */
export const signupBody = z.object({
  ...signupFields,
  acceptedPolicyVersion: versionField.describe('The current usage policy version (GET /v1/policies/usage): signing up accepts it'),
});
export const loginBody = z.object({ email: z.string().max(254), password: z.string().max(PASSWORD_MAX_LENGTH) });
export const workspaceNameBody = z.object({ name: workspaceNameSchema });

// ---- contracts ----------------------------------------------------------------------------------

const busy = {
  429: problem('Too many attempts from this address (Retry-After)'),
  503: problem('Too many passwords being checked right now (Retry-After)'),
};

export const signup = route({
  method: 'post',
  path: '/v1/signup',
  summary: 'Create an account',
  description:
    'Creates a user from an e-mail, a password and the accepted usage-policy version (GET /v1/policies/usage). The personal workspace is made at the first login. An e-mail already taken is 409.',
  tags: ['Accounts'],
  security: [],
  body: signupBody,
  responses: {
    201: { description: 'The account', schema: userView },
    409: problem('An account with this e-mail already exists'),
    422: invalidInput(),
    ...busy,
  },
});
/** The signup contract this process checks: acceptedPolicyVersion must be `currentVersion`. */
export const signupFor = (currentVersion: string) => ({
  ...signup,
  body: z.object({ ...signupFields, acceptedPolicyVersion: currentVersionField(currentVersion) }),
});

export const login = route({
  method: 'post',
  path: '/v1/login',
  summary: 'Log in: a session token (also set as the tg_session cookie)',
  description: 'The first login creates the personal workspace.',
  tags: ['Accounts'],
  security: [],
  body: loginBody,
  responses: {
    200: {
      description: 'The session',
      schema: loggedIn,
      headers: { 'Set-Cookie': '`tg_session=<token>`: the session cookie (HttpOnly, SameSite=Lax)' },
    },
    401: problem('Invalid e-mail or password'),
    422: invalidInput(),
    ...busy,
  },
});

export const logout = route({
  method: 'post',
  path: '/v1/logout',
  summary: 'End the session',
  description: 'Revokes the session token and clears the tg_session cookie. A browser sends X-Requested-With, as for every session write.',
  tags: ['Accounts'],
  security: ['session'],
  responses: {
    204: { description: 'Logged out', headers: { 'Set-Cookie': '`tg_session=`, expired: the cookie cleared' } },
    ...sessionWriteErrors,
  },
});

export const me = route({
  method: 'get',
  path: '/v1/me',
  summary: 'The user, their workspaces, pending invitations, notices and usage-policy status',
  description: "What the portal shows after login, in one read. 401 without a session (the portal's signed-out probe).",
  tags: ['Accounts'],
  security: ['session'],
  responses: { 200: { description: 'The signed-in user', schema: meView }, ...sessionErrors },
});

export const createWorkspace = route({
  method: 'post',
  path: '/v1/workspaces',
  summary: 'Create a workspace (the caller becomes its admin)',
  description: "A shared workspace with a new name; the caller is its first admin. The answer's Location names it.",
  tags: ['Workspaces'],
  security: ['session'],
  body: workspaceNameBody,
  responses: {
    201: { description: 'The workspace', schema: workspaceSummary, headers: { Location: 'The new workspace: `/v1/workspaces/{ws}`' } },
    ...sessionWriteErrors,
    422: invalidInput(),
  },
});

export const listWorkspaces = route({
  method: 'get',
  path: '/v1/workspaces',
  summary: "The caller's workspaces",
  description: "Every workspace the caller is a member of, with the caller's role in each; the personal one is marked `personal`.",
  tags: ['Workspaces'],
  security: ['session'],
  responses: { 200: { description: 'Personal first, then by name', schema: workspaceList }, ...sessionErrors },
});

export const showWorkspace = route({
  method: 'get',
  path: '/v1/workspaces/:ws',
  summary: 'One workspace and the caller’s role in it',
  description: '404 for a workspace the caller is not a member of, the same as for one that does not exist.',
  tags: ['Workspaces'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'The workspace', schema: workspaceView }, ...memberErrors },
});

export const renameWorkspace = route({
  method: 'patch',
  path: '/v1/workspaces/:ws',
  summary: 'Rename a workspace (admins)',
  description: 'A new name for a shared workspace; a personal workspace keeps its name. Members who are not admins get 403.',
  tags: ['Workspaces'],
  security: ['session'],
  params: wsParams,
  body: workspaceNameBody,
  responses: { 200: { description: 'The renamed workspace', schema: workspaceSummary }, ...memberWriteErrors, 422: invalidInput() },
});

export const listMembers = route({
  method: 'get',
  path: '/v1/workspaces/:ws/members',
  summary: 'The members of a workspace',
  description: 'Every member with their role and the time they joined. Any member may read it.',
  tags: ['Workspaces'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'Oldest member first', schema: memberList }, ...memberErrors },
});

const memberParams = wsParams.extend({ userId: z.string() });

export const removeMember = route({
  method: 'delete',
  path: '/v1/workspaces/:ws/members/:userId',
  summary: 'Remove a member (admins)',
  description: 'The member loses access at once. The last admin cannot be removed (409), nor the owner of a personal workspace.',
  tags: ['Workspaces'],
  security: ['session'],
  params: memberParams,
  responses: {
    204: { description: 'Removed' },
    ...memberWriteErrors,
    409: problem('A personal workspace’s owner, or the last admin, cannot be removed'),
  },
});

export const changeRole = route({
  method: 'put',
  path: '/v1/workspaces/:ws/members/:userId',
  summary: 'Change a member’s role (admins)',
  description: 'Makes a member an admin or a plain member. The last admin cannot be demoted: a workspace keeps at least one.',
  tags: ['Workspaces'],
  security: ['session'],
  params: memberParams,
  body: z.object({ role: z.enum(['admin', 'member'], { error: 'role must be "admin" or "member"' }) }),
  responses: {
    200: { description: 'The new role', schema: roleChanged },
    ...memberWriteErrors,
    409: problem('The last admin cannot be demoted'),
    422: invalidInput(),
  },
});

export const leaveWorkspace = route({
  method: 'post',
  path: '/v1/workspaces/:ws/leave',
  summary: 'Leave a workspace',
  description: 'The caller stops being a member. The last admin cannot leave, and nobody leaves their personal workspace.',
  tags: ['Workspaces'],
  security: ['session'],
  params: wsParams,
  responses: { 204: { description: 'Left' }, ...memberWriteErrors, 409: problem('A personal workspace, or its last admin, cannot leave') },
});

export const routes: RouteContract[] = [
  signup,
  login,
  logout,
  me,
  ...personalDataContracts,
  createWorkspace,
  listWorkspaces,
  showWorkspace,
  renameWorkspace,
  listMembers,
  removeMember,
  changeRole,
  setMemberBudget,
  leaveWorkspace,
  ...invitationContracts,
  ...keyContracts,
  ...auditContracts,
];
