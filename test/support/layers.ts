/**
 * The pure decision files: events, commands, state, decide/evolve and rules of each area, and the
 * platform's pure kernel (money, errors, event records, stream names). No store, no clock, no HTTP.
 */
export const PURE_FILES = [
  'accounts/api-keys.ts',
  'accounts/budget.ts',
  'accounts/funding.ts',
  'accounts/events.ts',
  'accounts/team.ts',
  'accounts/user.ts',
  'accounts/workspace-state.ts',
  'accounts/workspace.ts',
  'billing/commands.ts',
  'billing/decide.ts',
  'billing/events.ts',
  'billing/evolve.ts',
  'billing/funding-rule.ts',
  'billing/grants.ts',
  'billing/ids.ts',
  'billing/ledger.ts',
  'billing/rules.ts',
  'billing/state.ts',
  'billing/statement.ts',
  'inference/events.ts',
  'inference/metering.ts',
  'inference/models.ts',
  'inference/ts.ts',
  'inference/pricing.ts',
  'accounts/policy/acceptance.ts',
  'accounts/policy/events.ts',
  'accounts/policy/usage-policy.ts',
  'platform/errors.ts',
  'platform/event.ts',
  'platform/money.ts',
  'platform/streams.ts',
  'platform/budget-periods.ts',
  'accounts/budgets.ts',
];
/** Use cases: `src/<area>/usecases/**`. */
export const isUseCase = (f: string) => /^[a-z-]+\/([a-z-]+\/)?usecases\//.test(f);
/** The HTTP side: route handlers and contracts, the HTTP kit, the app (main.ts assembles it) and the serving-only areas. */
export const isHttp = (f: string) =>
  /(^|\/)routes\//.test(f) || /^platform\/http\//.test(f) || /^(portal|admin|openapi)\//.test(f) || f === 'main.ts';
