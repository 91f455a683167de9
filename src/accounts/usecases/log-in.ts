import { decideUser, normalizeEmail, personalWorkspaceId, userDecider } from '../user';
import { decideWorkspace, workspaceDecider } from '../workspace';
import { DomainError } from '../../platform/errors';
import { streams } from '../../platform/streams';
import { handleCommand } from '../../platform/eventstore/command-handler';
import type { EventMetadata } from '../../platform/eventstore/port';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { dummyPasswordHash, verifyPassword } from '../sessions/passwords';
import { createSession, type SessionUser } from '../sessions/sessions';
import type { Services } from '../../services';
import type { PasswordGuard } from './password-guard';
import { userByEmail } from './user-by-email';

const INVALID_LOGIN = 'Invalid e-mail or password';
export const PERSONAL_WORKSPACE_NAME = 'Personal';

export interface LoggedIn {
  token: string;
  user: SessionUser;
  firstLogin: boolean;
}

/**
 * Checks the password (the same scrypt runs whether or not the e-mail has an account), records the
 * login, and on the first one creates the personal workspace (idempotent: its id derives from the
 * user's). Returns a new session.
 */
export async function logIn(
  s: Services,
  guard: PasswordGuard,
  cmd: { email: string; password: string; correlationId?: string },
): Promise<LoggedIn> {
  const email = normalizeEmail(cmd.email);
  await guard.email(email);
  const user = await userByEmail(s, email);
  const stored = user?.registered ? user.passwordHash : await dummyPasswordHash();
  const ok = await guard.hash(() => verifyPassword(cmd.password, stored));
  if (!ok || !user?.registered) throw new DomainError('unauthenticated', INVALID_LOGIN);
  await guard.succeeded(email);

  const userId = user.userId;
  const metadata: EventMetadata = { actor: userId, correlationId: cmd.correlationId };
  let created;
  if (user.logins === 0) {
    const wsId = personalWorkspaceId(userId);
    created = await handleCommand(
      s.store,
      streams.workspace(wsId),
      workspaceDecider,
      (st) => ({
        events: decideWorkspace(
          { type: 'EnsurePersonalWorkspace', data: { workspaceId: wsId, name: PERSONAL_WORKSPACE_NAME, by: userId } },
          st,
        ),
        result: undefined,
      }),
      { metadata, newId: s.newId },
    );
  }
  const recorded = await handleCommand(
    s.store,
    streams.user(userId),
    userDecider,
    (st) => {
      const d = decideUser({ type: 'RecordLogin', data: { userId } }, st);
      return { events: d.events, result: d.firstLogin };
    },
    { metadata, newId: s.newId },
  );
  await readYourWrites(s, created?.appended, recorded.appended);
  const sessionUser = { userId, email: user.email, name: user.name };
  const token = await createSession(s, sessionUser);
  return { token, user: sessionUser, firstLogin: recorded.result };
}
