import { decideClaimEmail, decideUser, emailClaimDecider, userDecider } from '../user';
import { policyAccepted } from '../policy';
import { DomainError } from '../../platform/errors';
import { streams } from '../../platform/streams';
import { handleCommand, loadState } from '../../platform/eventstore/command-handler';
import { emailClaimOf } from './user-by-email';
import type { EventMetadata } from '../../platform/eventstore/port';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { hashPassword } from '../sessions/passwords';
import type { Services } from '../../services';
import type { PasswordGuard } from './password-guard';

type Deps = Pick<Services, 'store' | 'newId' | 'progress' | 'config' | 'log' | 'lookupHash'>;

/**
 * A new account: claims the e-mail (email-{hmac}, the claim's revision keeps addresses unique), then
 * registers the user on user-{userId} with the usage-policy version the signup form showed.
 * A claim whose registration never happened (a crash between the two appends) is taken over.
 */
export async function signUp(
  s: Deps,
  guard: PasswordGuard,
  cmd: { email: string; password: string; name: string; acceptedPolicyVersion: string; correlationId?: string },
): Promise<{ userId: string }> {
  const { email, name } = cmd;
  const passwordHash = await guard.hash(() => hashPassword(cmd.password));
  let userId = s.newId();
  const meta = (): EventMetadata => ({ actor: userId, correlationId: cmd.correlationId });
  const { stream: claimStream, claim } = await emailClaimOf(s, email);
  if (claim.state.claimedBy !== null) {
    const owner = await loadState(s.store, streams.user(claim.state.claimedBy), userDecider);
    if (owner.state.registered) throw new DomainError('conflict', 'An account with this e-mail already exists');
    userId = claim.state.claimedBy;
  } else {
    await handleCommand(
      s.store,
      claimStream,
      emailClaimDecider,
      (st) => ({ events: decideClaimEmail({ email, userId }, st), result: undefined }),
      {
        metadata: meta(),
        newId: s.newId,
      },
    );
  }
  const registered = await handleCommand(
    s.store,
    streams.user(userId),
    userDecider,
    (st) => ({
      events: [
        ...decideUser({ type: 'RegisterUser', data: { userId, email, name, passwordHash } }, st).events,
        policyAccepted(userId, cmd.acceptedPolicyVersion),
      ],
      result: undefined,
    }),
    { metadata: meta(), newId: s.newId },
  );
  await readYourWrites(s, registered.appended);
  return { userId };
}
