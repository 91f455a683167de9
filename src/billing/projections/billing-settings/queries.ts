import type { NanoUsd } from '../../../platform/money';
import type { ReadModels } from '../../../platform/projections/read-models';
import { BILLING_SETTINGS } from './projection';

export interface BillingSettings {
  paymentMethod: { id: string; brand: string; last4: string; gateway: string } | null;
  customerId: string | null;
  autoReload: {
    enabled: boolean;
    threshold: NanoUsd;
    amount: NanoUsd;
    monthlyCap: NanoUsd | null;
  } | null;
  suspended: { reason: string; at: string; reloadId: string } | null;
  inFlight: { reloadId: string; since: string } | null;
  /** Revision of billing-{wsId} the model reflects (null: no billing event yet). */
  revision: bigint | null;
  /** Global position of that event. */
  position: bigint | null;
  depositsSucceeded: number;
  /** Reloads triggered and not failed in the given UTC month. */
  reloadedThisMonth: NanoUsd;
}

export async function getBillingSettings(rm: ReadModels, workspaceId: string, month: string): Promise<BillingSettings> {
  const [settings, monthly] = await rm.read(BILLING_SETTINGS, (k) => [
    ['hgetall', k('ws', workspaceId)],
    ['hget', k('ws', workspaceId, 'months'), month],
  ]);
  return settingsOf(settings, monthly);
}

/**
 * getBillingSettings, or null for a workspace that never configured auto-reload (no arEnabled), in
 * which case only that one field is read: the auto-reload reactor's read for every debit, whose
 * rule cannot fire without it (most workspaces).
 */
export async function autoReloadSettings(rm: ReadModels, workspaceId: string, month: string): Promise<BillingSettings | null> {
  const [configured, settings, monthly] = await rm.read(
    BILLING_SETTINGS,
    (k) => [
      ['hget', k('ws', workspaceId), 'arEnabled'],
      ['hgetall', k('ws', workspaceId)],
      ['hget', k('ws', workspaceId, 'months'), month],
    ],
    { ifFirst: true },
  );
  return configured === null ? null : settingsOf(settings, monthly);
}

function settingsOf(settings: unknown, monthly: unknown): BillingSettings {
  const h = (settings as Record<string, string> | null) ?? {};
  return {
    paymentMethod: h.pm ? { id: h.pm, brand: h.brand ?? '', last4: h.last4 ?? '', gateway: h.gateway ?? '' } : null,
    customerId: h.customer || null,
    autoReload:
      h.arEnabled !== undefined
        ? {
            enabled: h.arEnabled === '1',
            threshold: BigInt(h.arThreshold ?? '0'),
            amount: BigInt(h.arAmount ?? '0'),
            monthlyCap: h.arCap ? BigInt(h.arCap) : null,
          }
        : null,
    suspended: h.suspendedReason ? { reason: h.suspendedReason, at: h.suspendedAt ?? '', reloadId: h.suspendedReloadId ?? '' } : null,
    inFlight: h.inFlight ? { reloadId: h.inFlight, since: h.inFlightSince ?? '' } : null,
    revision: h.rev !== undefined ? BigInt(h.rev) : null,
    position: h.position !== undefined ? BigInt(h.position) : null,
    depositsSucceeded: Number(h.depositsSucceeded ?? '0'),
    reloadedThisMonth: BigInt((monthly as string | null) ?? '0'),
  };
}

/** Workspaces with a reload triggered and not yet settled. */
export async function workspacesWithReloadInFlight(rm: ReadModels): Promise<string[]> {
  const k = await rm.keys(BILLING_SETTINGS);
  return rm.redis.smembers(k('inflight'));
}
