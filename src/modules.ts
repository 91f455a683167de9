import { accountsModule } from './accounts/module';
import { policyModule } from './accounts/policy/module';
import { adminModule } from './admin/router';
import { billingModule } from './billing/module';
import { inferenceModule } from './inference/module';
import { portalModule } from './portal/module';
import { webhooksModule } from './webhooks/module';
import type { Module } from './services';

/**
 * Every feature slice of tollgate. Add a module here and the composition root starts its
 * projections (its hot-path read models first), reactors, routes and workers in the roles that run
 * them. src/main.ts loads this list on first use: a one-shot command that needs no feature module
 * (the CLI's `events read`, a test's fixture modules) starts without loading every feature.
 */
// The portal comes last: its SPA fallback answers only what no API route took.
export const modules: Module[] = [accountsModule, billingModule, inferenceModule, adminModule, policyModule, webhooksModule, portalModule];
