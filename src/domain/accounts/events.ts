import type { Event } from '../event';

/**
 * Events of the `user-{id}`, `email-{sha256}` and `workspace-{id}` streams. These shapes are a
 * contract with every projection and with finance: never edit one in place, add a V2.
 */
export type UserRegistered = Event<'UserRegistered', { userId: string; email: string; name: string; passwordHash: string }>;
export type UserLoggedIn = Event<'UserLoggedIn', { userId: string }>;
export type EmailClaimed = Event<'EmailClaimed', { email: string; userId: string }>;

export type Role = 'admin' | 'member';

export type WorkspaceCreated = Event<
  'WorkspaceCreated',
  { workspaceId: string; name: string; personal: boolean; createdBy: string }
>;
export type WorkspaceRenamed = Event<'WorkspaceRenamed', { workspaceId: string; name: string; by: string }>;
export type MemberJoined = Event<'MemberJoined', { workspaceId: string; userId: string; role: Role }>;
export type InvitationSent = Event<
  'InvitationSent',
  { workspaceId: string; invitationId: string; email: string; userId: string; invitedBy: string }
>;
export type InvitationAccepted = Event<'InvitationAccepted', { workspaceId: string; invitationId: string; userId: string }>;
export type InvitationDeclined = Event<'InvitationDeclined', { workspaceId: string; invitationId: string; userId: string }>;
export type MemberRemoved = Event<'MemberRemoved', { workspaceId: string; userId: string; by: string }>;

/** The key's secret is never in an event: only its SHA-256 (hex), a display prefix and last 4. */
export type ApiKeyCreated = Event<
  'ApiKeyCreated',
  {
    workspaceId: string;
    keyId: string;
    name: string;
    keyHash: string;
    prefix: string;
    last4: string;
    scopes: string[];
    /** ISO-8601, or null for a key that never expires. */
    expiresAt: string | null;
    createdBy: string;
  }
>;
export type ApiKeyDeleted = Event<'ApiKeyDeleted', { workspaceId: string; keyId: string; keyHash: string; by: string }>;
/** An operator raised (or reset, with null) a key's request rate. */
export type RateLimitChanged = Event<
  'RateLimitChanged',
  { workspaceId: string; keyId: string; keyHash: string; requestsPerMinute: number | null; by: string }
>;

export type WorkspaceEvent =
  | WorkspaceCreated
  | WorkspaceRenamed
  | MemberJoined
  | InvitationSent
  | InvitationAccepted
  | InvitationDeclined
  | MemberRemoved
  | ApiKeyCreated
  | ApiKeyDeleted
  | RateLimitChanged;
