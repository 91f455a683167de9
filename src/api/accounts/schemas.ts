import type { RouteContract } from '../contract';

/** The accounts area's route contracts: request and response schemas, and the list the OpenAPI document is built from. */
export const routes: RouteContract[] = [];
