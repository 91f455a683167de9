import type { Response } from 'express';
import type { EventMetadata } from '../../platform/eventstore/port';
import type { AuthedUser } from '../sessions/access';

/** The id of the request being answered (the correlation id of what it appends). */
export const requestIdOf = (res: Response) => res.locals.requestId as string | undefined;

/** Metadata of every event an account request appends: who, and which request. */
export function metaOf(res: Response, actor?: string): EventMetadata {
  const user = res.locals.user as AuthedUser | undefined;
  return { actor: actor ?? user?.userId ?? 'anonymous', correlationId: requestIdOf(res) };
}
