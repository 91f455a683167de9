import type { Response } from 'express';
import { z } from 'zod';
import type { EventMetadata } from '../../eventstore/port';
import type { AuthedUser } from './access';

/** Metadata of every event an account request appends: who, and which request. */
export function metaOf(res: Response, actor?: string): EventMetadata {
  const user = res.locals.user as AuthedUser | undefined;
  return { actor: actor ?? user?.userId ?? 'anonymous', correlationId: res.locals.requestId as string | undefined };
}

/** Read-your-writes: the one helper every write that the next request must see waits with. */
export { readYourWrites as settle } from '../../usecases/read-your-writes';

export const emailSchema = z.string().trim().toLowerCase().max(254).pipe(z.email('Not a valid e-mail address'));
/** C0 and C1 control characters (NUL, ESC, DEL, …): never part of a name someone reads. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** A name shown to people (user, workspace, key): trimmed, bounded, no control characters. */
export function nameSchema(field: string, { min, max, label = field }: { min: number; max: number; label?: string }) {
  return z
    .string({ error: `${field} must be a string` })
    .trim()
    .min(min, min <= 1 ? `${label[0].toUpperCase()}${label.slice(1)} must not be empty` : `${label[0].toUpperCase()}${label.slice(1)} must be at least ${min} characters long`)
    .max(max, `${label[0].toUpperCase()}${label.slice(1)} must be at most ${max} characters long`)
    .refine((v) => !CONTROL.test(v), `${field} must not contain control characters`);
}

export const workspaceNameSchema = nameSchema('name', { min: 1, max: 100, label: 'a workspace name' });
