import { createHash, randomUUID } from 'node:crypto';
import type { EventStore, NewEvent } from '../../src/platform/eventstore/port';

/**
 * Traffic for bench:projector, shaped like a live service's history: per workspace a user, the
 * workspace, its member, API keys and deposits; then mostly inference, each request a stream of
 * InferenceRequested, InferenceCompleted and TokensDebited, spread over workspaces and keys
 * (a few busy workspaces, a long tail). The data carries every field the real events do.
 */
const CONFIGS = ['service_3_pi', 'service_3_productivity'] as const;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

interface Plan {
  workspaces: number;
  keysPerWorkspace: number;
}

export function planFor(events: number): Plan {
  return { workspaces: Math.max(10, Math.round(events / 100)), keysPerWorkspace: 3 };
}

/** One append: a stream and its events. */
type Append = [string, NewEvent[]];

function* setupAppends(plan: Plan): Generator<Append> {
  for (let w = 0; w < plan.workspaces; w++) {
    const userId = `u-${w}`;
    const ws = `ws-${w}`;
    const email = `owner${w}@example.test`;
    yield [
      `user-${userId}`,
      [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email, name: `Owner ${w}`, passwordHash: 'scrypt$bench' } }],
    ];
    yield [`email-${sha(email)}`, [{ id: randomUUID(), type: 'EmailClaimed', data: { email, userId } }]];
    const wsEvents: NewEvent[] = [
      {
        id: randomUUID(),
        type: 'WorkspaceCreated',
        data: { workspaceId: ws, name: `Workspace ${w}`, personal: true, createdBy: userId },
        metadata: { actor: userId },
      },
      { id: randomUUID(), type: 'MemberJoined', data: { workspaceId: ws, userId, role: 'owner' }, metadata: { actor: userId } },
    ];
    for (let k = 0; k < plan.keysPerWorkspace; k++) {
      const keyId = `key-${w}-${k}`;
      wsEvents.push({
        id: randomUUID(),
        type: 'ApiKeyCreated',
        data: {
          workspaceId: ws,
          keyId,
          name: `key ${k}`,
          keyHash: sha(keyId),
          prefix: 'tg_live_',
          last4: keyId.slice(-4),
          scopes: ['inference'],
          expiresAt: null,
          createdBy: userId,
        },
        metadata: { actor: userId },
      });
    }
    yield [`workspace-${ws}`, wsEvents];
    yield [
      `billing-${ws}`,
      [1, 2].map((d) => ({
        id: randomUUID(),
        type: 'DepositSucceeded',
        data: { workspaceId: ws, depositId: `dep-${w}-${d}`, amountNanoUsd: '100000000000', paymentIntentId: `pi_${w}_${d}`, by: userId },
        metadata: { actor: userId },
      })),
    ];
  }
}

/** A workspace by a skewed draw: a tenth of the workspaces get about half of the requests. */
function pickWorkspace(i: number, plan: Plan): number {
  const busy = Math.max(1, Math.floor(plan.workspaces / 10));
  return i % 2 === 0 ? (i * 7919) % busy : (i * 104729) % plan.workspaces;
}

function inferenceAppend(i: number, plan: Plan): Append {
  const w = pickWorkspace(i, plan);
  const ws = `ws-${w}`;
  const keyId = `key-${w}-${i % plan.keysPerWorkspace}`;
  const requestId = `req-${i}-${randomUUID().slice(0, 8)}`;
  const config = CONFIGS[i % CONFIGS.length];
  const inputTokens = 200 + (i % 800);
  const outputTokens = 50 + (i % 400);
  const amount = (BigInt(inputTokens) * 2500n + BigInt(outputTokens) * 10000n).toString();
  const meta = { actor: `apikey:${keyId}`, correlationId: requestId };
  return [
    `inference-${requestId}`,
    [
      {
        id: randomUUID(),
        type: 'InferenceRequested',
        data: {
          requestId,
          workspaceId: ws,
          keyId,
          config,
          endpoint: 'inference',
          promptTokens: inputTokens,
          maxTokens: 1024,
          reservedNanoUsd: '12740000',
          webSearch: false,
        },
        metadata: meta,
      },
      {
        id: randomUUID(),
        type: 'InferenceCompleted',
        data: { requestId, workspaceId: ws, keyId, config, finishReason: 'stop', inputTokens, outputTokens, durationMs: 300 + (i % 900) },
        metadata: meta,
      },
      {
        id: randomUUID(),
        type: 'TokensDebited',
        data: {
          requestId,
          workspaceId: ws,
          keyId,
          config,
          inputTokens,
          outputTokens,
          inputPriceNanoUsd: '2500',
          outputPriceNanoUsd: '10000',
          amountNanoUsd: amount,
        },
        metadata: meta,
      },
    ],
  ];
}

/** The appends of at least `events` events: setup first, then inference. */
export function trafficAppends(events: number): Append[] {
  const plan = planFor(events);
  const appends: Append[] = [...setupAppends(plan)];
  let written = appends.reduce((n, [, es]) => n + es.length, 0);
  for (let i = 0; written < events; i++) {
    const a = inferenceAppend(i, plan);
    appends.push(a);
    written += a[1].length;
  }
  return appends;
}

/**
 * The same traffic written straight into the PostgreSQL adapter's table (after store.ping() created
 * it) in multi-row INSERTs: filling through the adapter's appends takes tens of minutes on a loaded
 * machine, and the fill is not what is measured (the replay reads through the adapter).
 */
export async function fillPostgresRaw(
  client: { query(sql: string, values: unknown[]): Promise<unknown> },
  events: number,
): Promise<number> {
  const rows: unknown[][] = [];
  for (const [stream, es] of trafficAppends(events)) {
    es.forEach((e, rev) => rows.push([e.id, stream, rev, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata ?? {})]));
  }
  for (let at = 0; at < rows.length; at += 1000) {
    const chunk = rows.slice(at, at + 1000);
    const values = chunk.flat();
    // Positions as the adapter makes them (schema version 3): base + (this transaction's xid << 16) + index.
    const tuples = chunk.map(
      (_, i) =>
        `(p.first + ${i}, $${i * 6 + 1}, $${i * 6 + 2}, $${i * 6 + 3}::bigint, $${i * 6 + 4}, $${i * 6 + 5}::json, $${i * 6 + 6}::json, now())`,
    );
    await client.query(
      `INSERT INTO tollgate_events (position, event_id, stream_id, stream_revision, type, data, metadata, created)
       SELECT v.* FROM (SELECT base + (pg_current_xact_id()::text::bigint << 16) AS first FROM tollgate_positions) p,
       LATERAL (VALUES ${tuples.join(', ')}) v`,
      values,
    );
  }
  return rows.length;
}

/** Appends at least `events` events (setup first, then inference) with `concurrency` appends in flight. */
export async function fillTraffic(store: EventStore, events: number, concurrency = 32): Promise<number> {
  const plan = planFor(events);
  const appends = trafficAppends(events);
  const written = appends.reduce((n, [, es]) => n + es.length, 0);
  let next = 0;
  const worker = async () => {
    while (next < appends.length) {
      const [stream, es] = appends[next++];
      await store.append(stream, es, { expectedRevision: 'any' });
    }
  };
  // The setup must precede the inference that uses it (as in life): one append at a time first.
  const setupCount = plan.workspaces * 4;
  while (next < setupCount) await worker0(store, appends[next++]);
  await Promise.all(Array.from({ length: concurrency }, worker));
  return written;
}

async function worker0(store: EventStore, [stream, es]: Append) {
  await store.append(stream, es, { expectedRevision: 'any' });
}
