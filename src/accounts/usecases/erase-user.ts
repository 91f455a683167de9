import { DomainError, notFound } from '../../platform/errors';
import { handleCommand, loadState } from '../../platform/eventstore/command-handler';
import { ERASED } from '../../platform/crypto/protected-store';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { RebuildRunning, rebuildProjection } from '../../platform/projections/rebuild';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import { auditProjection } from '../projections/audit/projection';
import { invitationsProjection } from '../projections/invitations/projection';
import { membersOf, workspacesOf } from '../projections/memberships/queries';
import { verifyPassword } from '../sessions/passwords';
import { destroySessionsOf } from '../sessions/sessions';
import { emailClaimDecider, userDecider } from '../user';
import type { PasswordGuard } from './password-guard';
import { emailClaimOf } from './user-by-email';

export const userSubject = (userId: string) => `user:${userId}`;

/**
 * Erasure by crypto-shredding (docs/SECURITY.md):
 * 1. the user re-entered their password (the operator's route skips this); wrong: 403, nothing written;
 * 2. the last admin of a workspace with other members must hand it over first (409 naming them);
 * 3. the e-mail claim is released (EmailReleased), so the address can sign up again;
 * 4. the user's data key is destroyed: every personal field of their events reads as erased;
 * 5. UserErased is appended, sessions end, and the read models holding their fields are rebuilt.
 * A crash between steps is finished by running it again (3 is skipped once the address reads as erased).
 */
export async function eraseUser(
  s: Services,
  guard: PasswordGuard | null,
  cmd: { userId: string; password?: string; by: 'self' | 'operator'; correlationId?: string },
): Promise<void> {
  const { userId } = cmd;
  const user = await loadState(s.store, streams.user(userId), userDecider);
  if (!user.state.registered) throw notFound('User not found');
  if (cmd.by === 'self') {
    const ok = guard ? await guard.hash(() => verifyPassword(cmd.password ?? '', user.state.passwordHash)) : false;
    if (!ok) throw new DomainError('forbidden', 'The password is wrong: nothing was erased');
  }
  const blocking: string[] = [];
  for (const w of await workspacesOf(s.readModels, userId)) {
    if (w.personal || w.role !== 'admin') continue;
    const members = await membersOf(s.readModels, w.workspaceId);
    if (members.length > 1 && !members.some((m) => m.userId !== userId && m.role === 'admin'))
      blocking.push(`"${w.name}" (${w.workspaceId})`);
  }
  if (blocking.length) {
    throw new DomainError('conflict', `Make another member an admin of ${blocking.join(', ')} first: you are its last admin`);
  }
  const metadata = { actor: cmd.by === 'self' ? userId : 'operator', correlationId: cmd.correlationId };
  if (user.state.email !== ERASED) {
    const { stream, claim } = await emailClaimOf(s, user.state.email);
    if (claim.state.claimedBy === userId) {
      await handleCommand(
        s.store,
        stream,
        emailClaimDecider,
        () => ({ events: [{ type: 'EmailReleased' as const, data: { userId } }], result: undefined }),
        {
          metadata,
          newId: s.newId,
        },
      );
    }
  }
  await s.keys.destroy(userSubject(userId));
  const erased = await handleCommand(
    s.store,
    streams.user(userId),
    userDecider,
    (st) => {
      if (!st.registered) throw notFound('User not found');
      return {
        events: [{ type: 'UserErased' as const, data: { userId, by: cmd.by === 'self' ? userId : 'operator' } }],
        result: undefined,
      };
    },
    { metadata, newId: s.newId },
  );
  await destroySessionsOf(s, userId);
  await readYourWrites(s, erased.appended);
  // The invitee's address and the audit's copy of it, read again through the destroyed key.
  for (const projection of [invitationsProjection, auditProjection]) {
    try {
      await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection, partitions: s.config.PROJECTION_PARTITIONS });
    } catch (err) {
      if (!(err instanceof RebuildRunning)) throw err;
    }
  }
}
