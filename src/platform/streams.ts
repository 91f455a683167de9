import { createHash } from 'node:crypto';

/** Stream names. Every event of tollgate lives in one of these (docs/ARCHITECTURE.md, "Streams and events"). */
export const streams = {
  user: (userId: string) => `user-${userId}`,
  email: (email: string) => `email-${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`,
  workspace: (workspaceId: string) => `workspace-${workspaceId}`,
  billing: (workspaceId: string) => `billing-${workspaceId}`,
  inference: (requestId: string) => `inference-${requestId}`,
  /** One KeyBudget{80,100}PercentReached per key, budget period and threshold (written with no_stream). */
  keyBudgetThreshold: (keyId: string, periodId: string, percent: number) => `key-budget-${keyId}-${periodId}-${percent}`,
};
