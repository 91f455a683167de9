import type { Config } from '../../platform/config';
import { BillingRules, MAX_CHARGE, MIN_RELOAD } from '../rules';
import { parseUsd } from '../../platform/money';

/** The billing rules the configuration sets (the deposits) and the fixed ones (reload minimum, largest charge). */
export function billingRules(config: Pick<Config, 'INITIAL_DEPOSIT_USD' | 'MIN_DEPOSIT_USD'>): BillingRules {
  return {
    initialDeposit: parseUsd(config.INITIAL_DEPOSIT_USD),
    minDeposit: parseUsd(config.MIN_DEPOSIT_USD),
    minReload: MIN_RELOAD,
    maxCharge: MAX_CHARGE,
  };
}
