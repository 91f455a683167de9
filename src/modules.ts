import { accountsModule } from './api/accounts/module';
import { adminModule } from './api/admin/router';
import { billingModule } from './api/billing/module';
import { inferenceModule } from './api/inference/module';
import { policyModule } from './api/policy/module';
import { portalModule } from './api/portal/module';
import { coreReadModels } from './projections/core-module';
import type { Module } from './services';

/**
 * Every feature slice of tollgate. Add a module here and the composition root starts its
 * projections, reactors, routes and workers in the roles that run them.
 */
// The portal comes last: its SPA fallback answers only what no API route took.
export const modules: Module[] = [coreReadModels, accountsModule, billingModule, inferenceModule, adminModule, policyModule, portalModule];
