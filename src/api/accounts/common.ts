import type { Response } from 'express';
import type { EventMetadata } from '../../eventstore/port';
import type { AuthedUser } from './access';

/** Metadata of every event an account request appends: who, and which request. */
export function metaOf(res: Response, actor?: string): EventMetadata {
  const user = res.locals.user as AuthedUser | undefined;
  return { actor: actor ?? user?.userId ?? 'anonymous', correlationId: res.locals.requestId as string | undefined };
}

/** Read-your-writes: the one helper every write that the next request must see waits with. */
export { readYourWrites as settle } from '../../usecases/read-your-writes';
