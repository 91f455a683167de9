import { projection } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';
import { AUDITED_TYPES, auditEntry, type AuditedEvent } from './entries';

export const AUDIT = 'audit';

/** Positions are zero-padded to 20 digits (any unsigned 64-bit position) so they sort as strings. */
export const POSITION_WIDTH = 20;
export const padPosition = (p: bigint) => p.toString().padStart(POSITION_WIDTH, '0');

/**
 * Who did what in each workspace, from its `workspace-` and `billing-` streams (./entries.ts decides
 * what an event says). Entries sort by global position, exactly, as strings: a sorted set with every
 * score 0 read with ZREVRANGEBYLEX. Keys' names and last four are kept after a delete, so an old
 * entry still names the key.
 *
 *   rm:audit:{gen}:ws:{wsId}   sorted set (score 0): "{position, 20 digits}|{JSON entry}"
 *   rm:audit:{gen}:keys        hash: keyId → JSON {name, last4}
 *   rm:audit:{gen}:invitations hash: invitationId → invitee e-mail
 */
export const MERGE_KEY = luaScript('accounts/projections/audit/merge-key.lua', { keys: ['keys'], args: ['keyId', 'name', 'last4'] });

export const auditProjection = projection<AuditedEvent>()({
  name: AUDIT,
  handles: AUDITED_TYPES,
  apply(event, tx) {
    const entry = auditEntry(event);
    if (!entry) return;
    tx.multi.zadd(tx.key('ws', event.data.workspaceId), 0, `${padPosition(event.position)}|${JSON.stringify(entry)}`);
    if (event.type === 'ApiKeyCreated' || event.type === 'ApiKeyRenamed' || event.type === 'ApiKeyRolled') {
      const d = event.data;
      void MERGE_KEY.eval(
        tx.multi,
        { keys: tx.key('keys') },
        {
          keyId: d.keyId,
          name: 'name' in d ? d.name : '', // a roll keeps the name
          last4: 'last4' in d ? d.last4 : '', // a rename keeps the last 4
        },
      );
    }
    if (event.type === 'InvitationSent') tx.multi.hset(tx.key('invitations'), event.data.invitationId, event.data.email);
  },
});
