import { z } from 'zod';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem, sessionErrors, sessionWriteErrors } from '../../platform/http/error-bodies';
import { PASSWORD_MAX_LENGTH } from '../sessions/passwords';
import { role } from './fields';

/** The routes of a user's own personal data: erasure (crypto-shredding, docs/SECURITY.md) and export. */

export const eraseMe = route({
  method: 'delete',
  path: '/v1/me',
  summary: 'Erase my account: my personal data is made unreadable for good (crypto-shredding)',
  description:
    'Re-enter the password. The data key of the user is destroyed, so every personal field of their events reads as `[erased]`; ' +
    'ledgers and statements stay whole, and the e-mail can sign up again (docs/SECURITY.md).',
  tags: ['Accounts'],
  security: ['session'],
  body: z.object({ password: z.string().min(1).max(PASSWORD_MAX_LENGTH) }),
  responses: {
    204: { description: 'Erased; the session ended', headers: { 'Set-Cookie': '`tg_session=`, expired: the cookie cleared' } },
    ...sessionWriteErrors,
    403: problem('The password is wrong: nothing was erased'),
    409: problem('The user is the last admin of a workspace with other members (the answer names them)'),
    422: invalidInput(),
  },
});

export const exportMe = route({
  method: 'get',
  path: '/v1/me/export',
  summary: 'Everything held on me, as JSON (GDPR article 20)',
  description:
    'The profile, the workspaces with their role, and every event on the user’s own stream and their workspaces’ streams that names them ' +
    'or that they caused, decrypted. The password hash is never included.',
  tags: ['Accounts'],
  security: ['session'],
  responses: {
    200: {
      description: 'The profile, the workspaces and every event that names the user',
      schema: z.object({
        exportedAt: z.string(),
        user: z.object({ userId: z.string(), email: z.string(), name: z.string(), registered: z.string() }),
        workspaces: z.array(z.object({ workspaceId: z.string(), name: z.string(), role, personal: z.boolean() })),
        events: z.array(z.object({ stream: z.string(), type: z.string(), created: z.string(), data: z.record(z.string(), z.unknown()) })),
      }),
    },
    ...sessionErrors,
  },
});

export const personalDataContracts: RouteContract[] = [eraseMe, exportMe];
