/** What the portal reads from the /v1 API, normalised once here (docs/ACCOUNTS.md, docs/BILLING.md). */

export type Role = 'admin' | 'member';

export interface User {
  userId: string;
  email: string;
  name: string;
}

export interface Workspace {
  workspaceId: string;
  name: string;
  role: Role;
  personal: boolean;
}

export interface Invitation {
  invitationId: string;
  workspaceId: string;
  workspaceName: string;
  invitedBy: string;
  created?: string;
}

export interface Notice {
  id: string;
  kind: string;
  message: string;
  workspaceId?: string;
  created?: string;
}

export interface Me {
  user: User;
  workspaces: Workspace[];
  invitations: Invitation[];
  notices: Notice[];
  /** GET /v1/me's usagePolicy: whether the user accepted the current usage policy. */
  usagePolicy?: { currentVersion: string; acceptedVersion: string | null; accepted: boolean };
}

export interface PortalConfig {
  gateway: 'stripe' | 'sandbox';
  stripePublishableKey: string | null;
  /** Test payment methods the gateway answers by id (the sandbox, or Stripe test mode without Elements). */
  testCards: { paymentMethodId: string; brand: string; last4: string; behaviour: string }[];
  initialDepositUsd: string;
  minDepositUsd: string;
  prices: { inputUsdPerToken: string; outputUsdPerToken: string };
  models: string[];
  /** 'demo': the built-in sampling model answers (canned text, still billed); 'openai': a real model. */
  modelBackend?: 'demo' | 'openai';
}

type Obj = Record<string, unknown>;
const str = (v: unknown, d = ''): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : d);

export function normaliseWorkspace(w: Obj): Workspace {
  return {
    workspaceId: str(w.workspaceId ?? w.id),
    name: str(w.name),
    role: w.role === 'admin' ? 'admin' : 'member',
    personal: Boolean(w.personal),
  };
}

export function normaliseInvitation(i: Obj): Invitation {
  const ws = (i.workspace ?? {}) as Obj;
  const by = i.invitedBy;
  return {
    invitationId: str(i.invitationId ?? i.id),
    workspaceId: str(i.workspaceId ?? ws.workspaceId ?? ws.id),
    workspaceName: str(i.workspaceName ?? ws.name, 'a workspace'),
    invitedBy: typeof by === 'object' && by ? str((by as Obj).name ?? (by as Obj).email) : str(i.invitedByName ?? i.invitedByEmail ?? by),
    created: str(i.created ?? i.sentAt, ''),
  };
}

export function normaliseMe(raw: Obj): Me {
  const u = (raw.user ?? raw) as Obj;
  return {
    user: { userId: str(u.userId ?? u.id), email: str(u.email), name: str(u.name) },
    workspaces: ((raw.workspaces as Obj[]) ?? []).map(normaliseWorkspace),
    invitations: ((raw.invitations ?? raw.pendingInvitations ?? []) as Obj[]).map(normaliseInvitation),
    notices: ((raw.notices ?? []) as Obj[]).map((n) => ({
      id: str(n.id),
      kind: str(n.kind),
      message: str(n.message),
      workspaceId: n.workspaceId ? str(n.workspaceId) : undefined,
      created: str(n.created, ''),
    })),
    ...(raw.usagePolicy && typeof raw.usagePolicy === 'object' ? { usagePolicy: raw.usagePolicy as Me['usagePolicy'] } : {}),
  };
}
