import type { NanoUsd } from '../../../platform/money';
import type { ReadModels } from '../../../platform/projections/read-models';
import { BALANCES } from './projection';

export interface Balance {
  balance: NanoUsd;
  deposited: NanoUsd;
  reloaded: NanoUsd;
  debited: NanoUsd;
}

export async function getBalance(rm: ReadModels, workspaceId: string): Promise<Balance> {
  const [found] = await rm.read(BALANCES, (k) => [['hgetall', k('ws', workspaceId)]]);
  const h = (found as Record<string, string> | null) ?? {};
  const n = (v?: string) => BigInt(v ?? '0');
  return { balance: n(h.balance), deposited: n(h.deposited), reloaded: n(h.reloaded), debited: n(h.debited) };
}
