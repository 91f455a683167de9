/**
 * The accounts route kit other areas' routes build on: the session and membership checks of the
 * /v1 API, the contract fields of a workspace route, and the metadata a route handler's command carries.
 * (The HTTP side; a use case imports ../index.ts instead.)
 */
export { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
export { memberErrors, memberWriteErrors, wsParams } from './fields';
export { metaOf } from './common';
