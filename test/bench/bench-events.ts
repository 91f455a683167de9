import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/platform/eventstore/port';

/** A TokensDebited-sized event with the metadata every event carries. */
export function event(k: number): NewEvent {
  return {
    id: randomUUID(),
    type: k % 3 === 0 ? 'InferenceRequested' : k % 3 === 1 ? 'InferenceCompleted' : 'TokensDebited',
    data: {
      workspaceId: `ws-${k % 1000}`,
      requestId: `req-${k}`,
      inputTokens: 412,
      outputTokens: 96,
      amount: String(1_000_000 + (k % 9973)),
      prices: { input: '2500', output: '10000' },
    },
    metadata: { actor: `key-${k % 50}`, correlationId: `corr-${k}`, causationId: `cause-${k}` },
  };
}
