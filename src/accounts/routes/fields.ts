import { z } from 'zod';
import { problem, sessionErrors, sessionWriteErrors } from '../../platform/http/error-bodies';

/** Fields and answers the accounts area's contracts share (schemas.ts, key-schemas.ts, audit-schemas.ts). */

export const emailSchema = z.string().trim().toLowerCase().max(254).pipe(z.email('Not a valid e-mail address'));
/** C0 and C1 control characters (NUL, ESC, DEL, …): never part of a name someone reads. */
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** A name shown to people (user, workspace, key): trimmed, bounded, no control characters. */
export function nameSchema(field: string, { min, max, label = field }: { min: number; max: number; label?: string }) {
  return z
    .string({ error: `${field} must be a string` })
    .trim()
    .min(
      min,
      min <= 1
        ? `${label[0].toUpperCase()}${label.slice(1)} must not be empty`
        : `${label[0].toUpperCase()}${label.slice(1)} must be at least ${min} characters long`,
    )
    .max(max, `${label[0].toUpperCase()}${label.slice(1)} must be at most ${max} characters long`)
    .refine((v) => !CONTROL.test(v), `${field} must not contain control characters`);
}

export const workspaceNameSchema = nameSchema('name', { min: 1, max: 100, label: 'a workspace name' });

export const role = z.enum(['admin', 'member']);
export const wsParams = z.object({ ws: z.string().describe('Workspace id') });

/** The answers of a route under /v1/workspaces/:ws (requireMember): unknown and not-a-member look the same. */
export const memberErrors = { ...sessionErrors, 404: problem('Workspace not found, or the caller is not a member') } as const;
export const memberWriteErrors = { ...sessionWriteErrors, 404: problem('Workspace not found, or the caller is not a member') } as const;
