import { notFound } from '../../platform/errors';
import type { RecordedEvent } from '../../platform/eventstore/port';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import { workspacesOf } from '../projections/memberships/queries';

const PERSON_FIELDS = ['userId', 'by', 'createdBy', 'invitedBy'] as const;

const view = (e: RecordedEvent) => {
  const data = { ...(e.data as Record<string, unknown>) };
  // The password's hash is a credential, not information about the person.
  delete data.passwordHash;
  return { stream: e.stream, type: e.type, created: e.created, data };
};

/**
 * GDPR article 20: everything tollgate holds on the user, as JSON. Their own stream (profile, logins,
 * policy acceptances), the workspaces they belong to, and every event of those workspaces that
 * names them (as member, invitee, inviter, creator or author) or that they caused.
 */
export async function exportUser(s: Services, userId: string) {
  const own = await s.store.readStream(streams.user(userId));
  const registered = own.find((e) => e.type === 'UserRegistered');
  if (!registered) throw notFound('User not found');
  const profile = registered.data as { email: string; name: string };
  const workspaces = await workspacesOf(s.readModels, userId);
  const related: ReturnType<typeof view>[] = [];
  for (const w of workspaces) {
    for (const e of await s.store.readStream(streams.workspace(w.workspaceId))) {
      const d = e.data as Record<string, unknown>;
      if (PERSON_FIELDS.some((f) => d[f] === userId) || e.metadata.actor === userId) related.push(view(e));
    }
  }
  return {
    exportedAt: s.now().toISOString(),
    user: { userId, email: profile.email, name: profile.name, registered: registered.created },
    workspaces: workspaces.map((w) => ({ workspaceId: w.workspaceId, name: w.name, role: w.role, personal: w.personal })),
    events: [...own.map(view), ...related],
  };
}
