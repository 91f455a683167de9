import { Router } from 'express';
import { keyIndexProjection } from './projections/key-index/projection';
import { apiKeysProjection } from './projections/api-keys/projection';
import { auditProjection } from './projections/audit/projection';
import { invitationsProjection } from './projections/invitations/projection';
import { membershipsProjection } from './projections/memberships/projection';
import { usersProjection } from './projections/users/projection';
import type { Module } from '../services';
import { authRoutes } from './routes/auth-routes';
import { auditRoutes } from './routes/audit-routes';
import { invitationRoutes } from './routes/invitation-routes';
import { keyRollRoutes } from './routes/key-roll-routes';
import { keyRoutes } from './routes/key-routes';
import { teamRoutes } from './routes/team-routes';
import { memberBudgetRoutes } from './routes/member-budget-routes';
import { workspaceRoutes } from './routes/workspace-routes';

/**
 * Accounts: users, sessions, workspaces, invitations and API keys (the /v1 account API).
 * The key index is the read model the inference path authenticates with: a hot-path read model.
 */
export const accountsModule: Module = {
  name: 'accounts',
  hotPathProjections: [keyIndexProjection],
  projections: () => [membershipsProjection, invitationsProjection, usersProjection, apiKeysProjection, auditProjection],
  router: (s) => {
    const r = Router();
    r.use(
      authRoutes(s),
      workspaceRoutes(s),
      invitationRoutes(s),
      keyRoutes(s),
      teamRoutes(s),
      memberBudgetRoutes(s),
      auditRoutes(s),
      keyRollRoutes(s),
    );
    return r;
  },
};
