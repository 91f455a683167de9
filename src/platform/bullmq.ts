import type { Config } from './config';

/** BullMQ's key prefix under REDIS_PREFIX, shared by every area's queues. */
export const bullPrefix = (config: Pick<Config, 'REDIS_PREFIX'>) => `${config.REDIS_PREFIX}bull`;
