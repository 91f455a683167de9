import type { RouteContract } from '../platform/http/contract';
import { routes as accounts } from '../accounts/routes/schemas';
import { routes as admin } from '../admin/schemas';
import { routes as billing } from '../billing/routes/billing-schemas';
import { routes as inference } from '../inference/routes/schemas';
import { routes as policy } from '../accounts/policy/routes/policy-schemas';
import { routes as portal } from '../portal/schemas';
import { metricsPortRoutes, routes as system } from '../platform/http/system/schemas';
import { routes as webhooks } from '../billing/routes/stripe-webhook-schemas';
import { routes as meta } from './schemas';
import { routes as outgoingWebhooks } from '../webhooks/routes/webhook-schemas';

/** Every area's contracts: add an area's `routes` here and the document (and its coverage test) knows it. */
export const API_ROUTES: readonly RouteContract[] = [
  ...inference,
  ...accounts,
  ...billing,
  ...policy,
  ...webhooks,
  ...outgoingWebhooks,
  ...admin,
  ...portal,
  ...system,
  ...meta,
];

/** GET /metrics lives on its own listener (METRICS_PORT), not on the API port. */
export const METRICS_PORT_ROUTES: readonly RouteContract[] = metricsPortRoutes;
