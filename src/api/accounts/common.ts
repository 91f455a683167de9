import type { Response } from 'express';
import { z } from 'zod';
import type { AppendResult, EventMetadata } from '../../eventstore/port';
import type { Services } from '../../services';
import type { AuthedUser } from './access';

/** Metadata of every event an account request appends: who, and which request. */
export function metaOf(res: Response, actor?: string): EventMetadata {
  const user = res.locals.user as AuthedUser | undefined;
  return { actor: actor ?? user?.userId ?? 'anonymous', correlationId: res.locals.requestId as string | undefined };
}

/**
 * Read-your-writes: waits until the projections applied what was appended, so the next request
 * (a new key, a removed member) sees it. Answers anyway after READ_YOUR_WRITES_TIMEOUT_MS.
 */
export async function settle(s: Services, ...appended: (AppendResult | undefined)[]): Promise<void> {
  const positions = appended.filter((a): a is AppendResult => !!a).map((a) => a.position);
  if (!positions.length) return;
  const max = positions.reduce((m, p) => (p > m ? p : m));
  const ok = await s.progress.waitFor(max, s.config.READ_YOUR_WRITES_TIMEOUT_MS);
  if (!ok) s.log.warn({ position: max.toString() }, 'projections did not reach an account write in time; answering anyway');
}

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
