import { luaInclude } from '../../../platform/redis-scripts';

/** The grant book's Lua functions (./grant-book.inc.lua), for the balances and the ledger projections. */
export const grantBookLua = luaInclude('billing/projections/grants/grant-book.inc.lua');
