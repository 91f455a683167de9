import { accountsModule } from './accounts/module';
import { adminModule } from './admin/router';
import { billingModule } from './billing/module';
import { inferenceModule } from './inference/module';
import { policyModule } from './accounts/policy/module';
import { portalModule } from './portal/module';
import { webhooksModule } from './webhooks/module';
import { coreReadModels } from './core-read-models';
import type { Module } from './services';

/**
 * Every feature slice of tollgate. Add a module here and the composition root starts its
 * projections, reactors, routes and workers in the roles that run them.
 */
// The portal comes last: its SPA fallback answers only what no API route took.
export const modules: Module[] = [coreReadModels, accountsModule, billingModule, inferenceModule, adminModule, policyModule, webhooksModule, portalModule];
