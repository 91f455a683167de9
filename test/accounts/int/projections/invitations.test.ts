import { invitationsProjection } from '../../../../src/accounts/projections/invitations/projection';
import { invitation, pendingForEmail, pendingForWorkspace } from '../../../../src/accounts/projections/invitations/queries';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(invitationsProjection);
const sent = (invitationId: string, email: string) =>
  ({ type: 'InvitationSent', data: { workspaceId: 'w1', invitationId, email, userId: `u-${invitationId}`, invitedBy: 'ann' } }) as const;

describe('invitations projection', () => {
  test('a sent invitation is pending, by id, by e-mail and by workspace', () =>
    spec.given({ ...sent('i1', 'bob@example.com'), created: '2026-03-01T00:00:00.000Z' }).then(async ({ readModels }) => {
      const expected = {
        invitationId: 'i1',
        workspaceId: 'w1',
        email: 'bob@example.com',
        userId: 'u-i1',
        invitedBy: 'ann',
        status: 'pending',
        created: '2026-03-01T00:00:00.000Z',
        settled: null,
      };
      expect(await invitation(readModels, 'i1')).toEqual(expected);
      expect(await pendingForEmail(readModels, 'bob@example.com')).toEqual([expected]);
      expect(await pendingForWorkspace(readModels, 'w1')).toEqual([expected]);
    }));

  test('accepted, declined and revoked invitations keep their record with the outcome and leave the pending lists', () =>
    spec
      .given(
        sent('i1', 'bob@example.com'),
        sent('i2', 'carl@example.com'),
        sent('i3', 'dora@example.com'),
        sent('i4', 'emma@example.com'),
        {
          type: 'InvitationAccepted',
          data: { workspaceId: 'w1', invitationId: 'i1', userId: 'u-i1' },
          created: '2026-03-02T00:00:00.000Z',
        },
        { type: 'InvitationDeclined', data: { workspaceId: 'w1', invitationId: 'i2', userId: 'u-i2' } },
        {
          type: 'InvitationRevoked',
          data: { workspaceId: 'w1', invitationId: 'i3', email: 'dora@example.com', userId: 'u-i3', by: 'ann' },
        },
      )
      .then(async ({ readModels }) => {
        expect(await invitation(readModels, 'i1')).toMatchObject({ status: 'accepted', settled: '2026-03-02T00:00:00.000Z' });
        expect((await invitation(readModels, 'i2'))?.status).toBe('declined');
        expect((await invitation(readModels, 'i3'))?.status).toBe('revoked');
        for (const email of ['bob@example.com', 'carl@example.com', 'dora@example.com'])
          expect(await pendingForEmail(readModels, email)).toEqual([]);
        expect((await pendingForWorkspace(readModels, 'w1')).map((i) => i.invitationId)).toEqual(['i4']);
      }));
});
