import { Router } from 'express';
import { apiKeysProjection } from '../../projections/api-keys/projection';
import { auditProjection } from '../../projections/audit/projection';
import { invitationsProjection } from '../../projections/invitations/projection';
import { membershipsProjection } from '../../projections/memberships/projection';
import { usersProjection } from '../../projections/users/projection';
import type { Module } from '../../services';
import { authRoutes } from './auth-routes';
import { auditRoutes } from './audit-routes';
import { invitationRoutes } from './invitation-routes';
import { keyRollRoutes } from './key-roll-routes';
import { keyRoutes } from './key-routes';
import { teamRoutes } from './team-routes';
import { workspaceRoutes } from './workspace-routes';

/**
 * Accounts: users, sessions, workspaces, invitations and API keys (the /v1 account API).
 * The key index the inference path reads is in the core read models (src/projections/key-index).
 */
export const accountsModule: Module = {
  name: 'accounts',
  projections: () => [membershipsProjection, invitationsProjection, usersProjection, apiKeysProjection, auditProjection],
  router: (s) => {
    const r = Router();
    r.use(authRoutes(s), workspaceRoutes(s), invitationRoutes(s), keyRoutes(s), teamRoutes(s), auditRoutes(s), keyRollRoutes(s));
    return r;
  },
};
