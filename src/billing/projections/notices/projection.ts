import type { BillingEvent } from '../../events';
import { projection } from '../../../platform/projections/projection';

export const NOTICES = 'billing-notices';

/**
 * Billing notices for GET /v1/me, written in the accounts slice's format (src/accounts/notices.ts):
 *
 *   {prefix}notices:ws:{wsId}   hash: noticeId → JSON {id, kind, message, workspaceId, audience, created}
 *
 * A shared key (outside generations), read for the workspace's admins. One notice per workspace and
 * kind, with a stable id, so a replay writes the same field again; it is removed when the admin
 * acts (a new payment method, or the auto-reload settings saved again).
 */
export const autoReloadNoticeId = (workspaceId: string) => `auto-reload-suspended:${workspaceId}`;

export interface BillingNotice {
  id: string;
  kind: 'auto_reload_suspended';
  message: string;
  workspaceId: string;
  audience: 'admins';
  created: string;
  reloadId: string;
}

export const noticesKey = (sharedKey: (...p: string[]) => string, workspaceId: string) => sharedKey('notices', 'ws', workspaceId);

export const billingNoticesProjection = projection<BillingEvent>()({
  name: NOTICES,
  handles: ['AutoReloadSuspended', 'PaymentMethodAttached', 'AutoReloadConfigured'],
  apply(event, tx) {
    const ws = event.data.workspaceId;
    const key = noticesKey(tx.sharedKey, ws);
    const id = autoReloadNoticeId(ws);
    if (event.type === 'AutoReloadSuspended') {
      const d = event.data;
      const notice: BillingNotice = {
        id,
        kind: 'auto_reload_suspended',
        message: `Auto-reload is suspended for this workspace. ${d.reason}`,
        workspaceId: ws,
        audience: 'admins',
        created: event.created,
        reloadId: d.reloadId,
      };
      tx.multi.hset(key, id, JSON.stringify(notice));
    } else {
      tx.multi.hdel(key, id);
    }
  },
});
