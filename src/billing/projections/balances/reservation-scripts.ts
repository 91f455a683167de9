import { luaInclude, luaScript } from '../../../platform/redis-scripts';

/**
 * The reservation scripts. `reserve` (./reserve.inc.lua) is an include, so that the inference
 * admission script (key lookup, rate limit and this reservation in one round trip) and the
 * stand-alone RESERVE run the same function: a script that needs it says `--@include reserve` and
 * is given `reserveLua`.
 */
export const reserveLua = luaInclude('billing/projections/balances/reserve.inc.lua');

/** balance: the workspace's balances key in the active generation (reserve.inc.lua's `base`); keyId '' for none. */
export const RESERVE = luaScript(
  'billing/projections/balances/reserve.lua',
  {
    keys: ['balance', 'held', 'open'],
    args: ['wsId', 'requestId', 'amount', 'nowMs', 'keyId', 'daily', 'weekly', 'monthly'],
  },
  [reserveLua],
);

/**
 * Frees a request's hold (and its key's and member's shares of it). Also what the balances
 * projection runs when it applies the request's TokensDebited, in the same MULTI as the debit and
 * the spend counters (tx.evalEach). Keys and arguments: releaseCall (./reservation-keys.ts).
 */
export const RELEASE = luaScript('billing/projections/balances/release.lua', {
  keys: ['held', 'open'],
  args: ['requestId', 'openMember'],
});

/**
 * Settlement without the projector: once a request's completion is recorded, its api process turns
 * the hold (the most it could cost) into the settled cost, pending until the projector applies the
 * request's TokensDebited (whose RELEASE then drops it, as it drops a hold). So available credit =
 * balance − holds − pending, and credit is never held for projector lag: only what was spent stays
 * counted, against the balance and the budgets alike. The same keys and arguments as RELEASE, then
 * the settled cost.
 */
export const TO_PENDING = luaScript('billing/projections/balances/to-pending.lua', {
  keys: ['held', 'open'],
  args: ['requestId', 'openMember', 'cost'],
});
