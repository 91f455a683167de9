import type { ApiKeyCreated } from '../../../../src/accounts/events';
import { auditProjection } from '../../../../src/accounts/projections/audit/projection';
import { auditInvitationEmails, auditKeys, auditPage } from '../../../../src/accounts/projections/audit/queries';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(auditProjection);
const W = 'workspace-w1';
const keyCreated: ApiKeyCreated & { stream: string; metadata: { actor: string } } = {
  type: 'ApiKeyCreated',
  stream: W,
  metadata: { actor: 'ann' },
  data: {
    workspaceId: 'w1',
    keyId: 'k1',
    name: 'one',
    keyHash: 'secret-hash',
    prefix: 'tgk_aaaa',
    last4: '1111',
    scopes: ['inference'],
    expiresAt: null,
    createdBy: 'ann',
  },
};

describe('audit projection', () => {
  test("a workspace's and its billing's events, newest first, without secrets; keys and invitees kept for naming", () =>
    spec
      .given(
        keyCreated,
        {
          type: 'ApiKeyRenamed',
          stream: W,
          data: { workspaceId: 'w1', keyId: 'k1', keyHash: 'secret-hash', name: 'uno', previousName: 'one', by: 'ann' },
        },
        {
          type: 'InvitationSent',
          stream: W,
          data: { workspaceId: 'w1', invitationId: 'i1', email: 'bob@example.com', userId: 'bob', invitedBy: 'ann' },
        },
        {
          type: 'DepositSucceeded',
          stream: 'billing-w1',
          data: { workspaceId: 'w1', depositId: 'd1', amountNanoUsd: '5000000000', paymentIntentId: 'pi_1', by: 'ann' },
        },
        { type: 'ApiKeyDeleted', stream: W, data: { workspaceId: 'w1', keyId: 'k1', keyHash: 'secret-hash', by: 'ann' } },
      )
      .then(async ({ readModels }) => {
        const page = await auditPage(readModels, 'w1', { limit: 10 });
        expect(page.entries.map((e) => e.action)).toEqual([
          'key.deleted',
          'billing.deposit',
          'invitation.sent',
          'key.renamed',
          'key.created',
        ]);
        expect(page.entries[4]).toMatchObject({ actor: 'ann', target: { type: 'apiKey', id: 'k1' }, outcome: 'succeeded' });
        expect(page.entries[1].details).toEqual({ amount: '5' });
        expect(JSON.stringify(page)).not.toContain('secret-hash');
        expect(await auditKeys(readModels, ['k1'])).toEqual(new Map([['k1', { name: 'uno', last4: '1111' }]]));
        expect(await auditInvitationEmails(readModels, ['i1'])).toEqual(new Map([['i1', 'bob@example.com']]));
      }));

  test('an event of any other stream is not in the log', () =>
    spec
      .given({ ...keyCreated, stream: 'elsewhere-w1' })
      .then(async ({ readModels }) => expect((await auditPage(readModels, 'w1', { limit: 10 })).entries).toEqual([])));
});
