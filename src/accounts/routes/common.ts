import type { Response } from 'express';
import type { EventMetadata } from '../../platform/eventstore/port';
import type { AuthedUser } from '../sessions/access';

/** Metadata of every event an account request appends: who, and which request. */
export function metaOf(res: Response, actor?: string): EventMetadata {
  const user = res.locals.user as AuthedUser | undefined;
  return { actor: actor ?? user?.userId ?? 'anonymous', correlationId: res.locals.requestId as string | undefined };
}

/** Read-your-writes: the one helper every write that the next request must see waits with. */
export { readYourWrites as settle } from '../../platform/projections/read-your-writes';
