import type { RecordedEvent } from '../../eventstore/port';
import type { DepositSucceeded, AutoReloadSucceeded } from '../../domain/billing/events';
import type { TokensDebited } from '../../domain/inference/events';
import type { Projection, ProjectionTx } from '../projection';
import { reservationKeys } from './reservations';

export const BALANCES = 'balances';

/**
 * Balance per workspace = deposits + reloads − debits, in nano-USD (HINCRBY is exact in int64).
 * Applying a TokensDebited also releases the request's reservation, in the same MULTI, so the
 * money moves from "held" to "spent" atomically.
 *
 *   rm:balances:{gen}:ws:{wsId}  hash: balance, deposited, reloaded, debited
 */
const RELEASE = `
local amt = redis.call('HGET', KEYS[1], ARGV[1])
if amt then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('DECRBY', KEYS[2], amt)
  redis.call('ZREM', KEYS[3], ARGV[2])
end
return amt`;

type Data = DepositSucceeded['data'] | AutoReloadSucceeded['data'] | TokensDebited['data'];

export const balancesProjection: Projection = {
  name: BALANCES,
  handles: new Set(['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited']),
  apply(event: RecordedEvent, tx: ProjectionTx) {
    const d = event.data as Data;
    const key = tx.key('ws', d.workspaceId);
    switch (event.type) {
      case 'DepositSucceeded':
        tx.multi.hincrby(key, 'balance', d.amountNanoUsd).hincrby(key, 'deposited', d.amountNanoUsd);
        break;
      case 'AutoReloadSucceeded':
        tx.multi.hincrby(key, 'balance', d.amountNanoUsd).hincrby(key, 'reloaded', d.amountNanoUsd);
        break;
      case 'TokensDebited': {
        const debit = d as TokensDebited['data'];
        // (-x).toString(), not `-${x}`: Redis refuses "-0" as an integer (a debit of nothing is possible).
        tx.multi.hincrby(key, 'balance', (-BigInt(debit.amountNanoUsd)).toString()).hincrby(key, 'debited', debit.amountNanoUsd);
        const k = reservationKeys(tx.sharedKey, debit.workspaceId);
        tx.multi.eval(RELEASE, 3, k.held, k.total, k.open, debit.requestId, `${debit.workspaceId}:${debit.requestId}`);
        break;
      }
    }
  },
};
