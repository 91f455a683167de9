/**
 * The accounts use cases, one file per command: each loads its stream(s), asks the decider
 * (user.ts, workspace.ts), appends with the exact revision and waits for the projections when the
 * next request must see the write (read-your-writes). They throw DomainError and know nothing of HTTP.
 */
export { acceptInvitation, type InvitationAnswer } from './accept-invitation';
export { changeMemberRole } from './change-member-role';
export { createKey, DEFAULT_SCOPES, type CreatedKey } from './create-key';
export { createWorkspace } from './create-workspace';
export { declineInvitation } from './decline-invitation';
export { deleteKey } from './delete-key';
export { eraseUser, userSubject } from './erase-user';
export { exportUser } from './export-user';
export { leaveWorkspace } from './leave-workspace';
export { logIn, PERSONAL_WORKSPACE_NAME, type LoggedIn } from './log-in';
export type { PasswordGuard } from './password-guard';
export { removeMember } from './remove-member';
export { renameWorkspace } from './rename-workspace';
export { revokeInvitation } from './revoke-invitation';
export { rollKey, type RolledKey } from './roll-key';
export { sendInvitation } from './send-invitation';
export { setMemberBudget } from './set-member-budget';
export { setRateLimit } from './set-rate-limit';
export { signUp } from './sign-up';
export { updateKey } from './update-key';
