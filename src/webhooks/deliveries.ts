import type { Redis } from 'ioredis';
import type { Keyspace } from '../platform/projections/keyspace';

/**
 * The delivery log, in Redis (shared keys, outside projection generations: it records what the
 * sender did, which no replay can rebuild):
 *   {prefix}webhooks:deliveries:{endpointId}        hash  eventId → JSON Delivery
 *   {prefix}webhooks:delivery-order:{endpointId}    zset  eventId by first enqueue time (ms)
 * A delivery's id is the event id: webhook-id on the wire, the same on every attempt and resend.
 */
export interface DeliveryAttempt {
  at: string;
  /** The receiver's HTTP status, or null when no answer came (refused, timeout, SSRF guard). */
  status: number | null;
  error: string | null;
}

export interface Delivery {
  deliveryId: string;
  endpointId: string;
  workspaceId: string;
  eventType: string;
  /** The exact body sent, so a resend signs the same bytes. */
  payload: string;
  status: 'pending' | 'succeeded' | 'failed' | 'skipped';
  attempts: DeliveryAttempt[];
  created: string;
  /** The event's position in the log (decimal string): a replay can start there. Absent in older records. */
  position?: string;
}

const keys = (ks: Keyspace, endpointId: string) => ({
  hash: ks.shared('webhooks', 'deliveries', endpointId),
  order: ks.shared('webhooks', 'delivery-order', endpointId),
});

/** Records a delivery as pending unless one is already recorded for this event (a replayed enqueue). */
export async function recordPending(redis: Redis, ks: Keyspace, d: Omit<Delivery, 'status' | 'attempts'>): Promise<void> {
  const k = keys(ks, d.endpointId);
  const fresh: Delivery = { ...d, status: 'pending', attempts: [] };
  const added = await redis.hsetnx(k.hash, d.deliveryId, JSON.stringify(fresh));
  if (added) await redis.zadd(k.order, Date.parse(d.created) || Date.now(), d.deliveryId);
}

export async function getDelivery(redis: Redis, ks: Keyspace, endpointId: string, deliveryId: string): Promise<Delivery | null> {
  const raw = await redis.hget(keys(ks, endpointId).hash, deliveryId);
  return raw ? (JSON.parse(raw) as Delivery) : null;
}

/** Appends an attempt and sets the status. One worker handles a job at a time, so read-modify-write is safe here. */
export async function recordAttempt(
  redis: Redis,
  ks: Keyspace,
  d: Delivery,
  attempt: DeliveryAttempt,
  status: Delivery['status'],
): Promise<void> {
  const next: Delivery = { ...d, status, attempts: [...d.attempts, attempt] };
  await redis.hset(keys(ks, d.endpointId).hash, d.deliveryId, JSON.stringify(next));
}

export async function setStatus(redis: Redis, ks: Keyspace, d: Delivery, status: Delivery['status']): Promise<void> {
  await redis.hset(keys(ks, d.endpointId).hash, d.deliveryId, JSON.stringify({ ...d, status }));
}

/** Newest first, at most `limit`. */
export async function listDeliveries(redis: Redis, ks: Keyspace, endpointId: string, limit = 100): Promise<Delivery[]> {
  const k = keys(ks, endpointId);
  const ids = await redis.zrevrange(k.order, 0, limit - 1);
  if (ids.length === 0) return [];
  const raws = await redis.hmget(k.hash, ...ids);
  return raws.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as Delivery);
}
