import { accountsModule } from './api/accounts/module';
import { billingModule } from './api/billing/module';
import { inferenceModule } from './api/inference/module';
import { portalModule } from './api/portal/module';
import { coreReadModels } from './projections/core-module';
import type { Module } from './services';

/**
 * Every feature slice of tollgate. Add a module here and the composition root starts its
 * projections, reactors, routes and workers in the roles that run them.
 */
export const modules: Module[] = [coreReadModels, accountsModule, billingModule, portalModule, inferenceModule];
