import { Router } from 'express';
import { balancesProjection } from './projections/balances/projection';
import { billingSettingsProjection } from './projections/billing-settings/projection';
import { ledgerProjection } from './projections/ledger/projection';
import { billingNoticesProjection } from './projections/notices/projection';
import { usageProjection } from './projections/usage/projection';
import type { Module, Services } from '../services';
import { autoReloadReactor, RELOAD_QUEUE, ReloadWorkerOptions, startReloadWorkerFor } from './workers/auto-reload';
import { keyBudgetAlertReactor } from './workers/budget-alerts/reactor';
import { startCreditExpiryWorker } from './workers/credit-expiry/worker';
import { stripeWebhookRoutes } from './routes/stripe-webhook';
import { billingRoutes } from './routes/billing-routes';
import { usageRoutes } from './routes/usage-routes';
import { statementRoutes } from './routes/statement-routes';

/**
 * Billing: card and deposits, the ledger, usage series, notices, Stripe webhooks, the
 * auto-reload reactor and worker, and the key-budget alerts (docs/BILLING.md). Balances (with the reservations
 * beside them) are what the inference path holds money against: a hot-path read model.
 */
export function billingModuleWith(workerOptions: ReloadWorkerOptions = {}): Module {
  return {
    name: 'billing',
    hotPathProjections: [balancesProjection],
    projections: () => [billingSettingsProjection, ledgerProjection, usageProjection, billingNoticesProjection],
    reactors: (s: Services) => [
      autoReloadReactor({ readModels: s.readModels, queue: () => s.reloadQueue(), now: s.now }),
      keyBudgetAlertReactor({ readModels: s.readModels, redis: s.redis, ks: s.ks, store: s.store }),
    ],
    router: (s: Services) => {
      const r = Router();
      r.use(stripeWebhookRoutes(s), billingRoutes(s), usageRoutes(s), statementRoutes(s));
      return r;
    },
    async startWorkers(s: Services) {
      const running = await startReloadWorkerFor(s, workerOptions);
      const expiry = startCreditExpiryWorker(s);
      return { close: () => Promise.all([running.close(), expiry.close()]).then(() => undefined) };
    },
    queues: [RELOAD_QUEUE],
  };
}

export const billingModule: Module = billingModuleWith();
