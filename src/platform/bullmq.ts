import type { Config } from './config';

/**
 * BullMQ's key prefix for `queue`, under REDIS_PREFIX. BullMQ's scripts touch many keys of a queue
 * (`<prefix>:<queue>:wait`, `…:active`, …), so on a Redis Cluster (REDIS_CLUSTER_NODES) the prefix
 * is a hash tag of the queue's own, `{prefix}{bull:<queue>}`: one slot per queue, queues spread over
 * the nodes. On one Redis it stays `{prefix}bull`, as before: a queue's waiting jobs are kept
 * across an upgrade (they cannot be rebuilt from the event store as read models are). Every Queue,
 * Worker and QueueEvents of a queue must use the same one; never ioredis's keyPrefix (BullMQ
 * refuses it).
 */
export const bullPrefix = (config: Pick<Config, 'REDIS_PREFIX' | 'REDIS_CLUSTER_NODES'>, queue: string) =>
  config.REDIS_CLUSTER_NODES?.length ? `${config.REDIS_PREFIX}{bull:${queue}}` : `${config.REDIS_PREFIX}bull`;
