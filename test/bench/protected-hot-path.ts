/**
 * What the sealing wrapper (src/platform/crypto/protected-store.ts) adds to the inference hot path,
 * on its own: the same calls on a store that answers at once, with and without the wrapper, in
 * alternating blocks. A request's appends, its stream read and the projector's subscription pass
 * through the wrapper untouched (no inference event is protected), so this is its whole cost per
 * request; docs/BENCHMARKS.md relates it to bench:peer's CPU per request.
 *   npx tsx test/bench/protected-hot-path.ts
 */
import { randomUUID } from 'node:crypto';
import { accountsProtectedEvents } from '../../src/accounts/protected-events';
import { webhooksProtectedEvents } from '../../src/webhooks/protected-events';
import type { KeyStore } from '../../src/platform/crypto/key-store';
import { ProtectedStore } from '../../src/platform/crypto/protected-store';
import type { AppendResult, EventStore, RecordedEvent, Subscription } from '../../src/platform/eventstore/port';

const N = Number(process.env.N ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

const event = (type: string, i: number): RecordedEvent => ({
  id: randomUUID(),
  stream: 'inference-x',
  revision: BigInt(i),
  position: BigInt(i),
  type,
  data: { requestId: 'x', outputTokens: 12 },
  metadata: {},
  created: '2026-11-28T00:00:00.000Z',
});
const stream = [event('InferenceRequested', 0), event('InferenceCompleted', 1), event('TokensDebited', 2)];
const done: AppendResult = { nextExpectedRevision: 0n, position: 0n };

/** Answers at once: only the caller's and the wrapper's own work is timed. */
const instant: EventStore = {
  kind: 'sqlite',
  append: async () => done,
  readStream: async () => stream,
  readAll: async () => stream,
  subscribeToAll(): Subscription {
    let i = 0;
    return {
      close: async () => undefined,
      [Symbol.asyncIterator]: () => ({
        next: async () => (i++ < N ? { done: false, value: stream[i % 3] } : { done: true, value: undefined }),
      }),
    };
  },
  headPosition: async () => 0n,
  ping: async () => undefined,
  close: async () => undefined,
};
const noKeys = {} as KeyStore; // never asked: no inference event is protected
const wrapped = new ProtectedStore(instant, noKeys, [...accountsProtectedEvents, ...webhooksProtectedEvents]);

/** One request's store calls: InferenceRequested, then InferenceCompleted + TokensDebited, and a read of its stream. */
async function requests(store: EventStore): Promise<number> {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    await store.append('inference-x', [{ id: 'a', type: 'InferenceRequested', data: { requestId: 'x' } }], {
      expectedRevision: 'no_stream',
    });
    await store.append(
      'inference-x',
      [
        { id: 'b', type: 'InferenceCompleted', data: { requestId: 'x' } },
        { id: 'c', type: 'TokensDebited', data: { requestId: 'x' } },
      ],
      { expectedRevision: 0n },
    );
    await store.readStream('inference-x');
  }
  return Number(process.hrtime.bigint() - t) / N;
}

/** The projector's side: events through the subscription. */
async function subscription(store: EventStore): Promise<number> {
  const t = process.hrtime.bigint();
  let n = 0;
  for await (const e of store.subscribeToAll()) n += e.position >= 0n ? 1 : 0;
  if (n !== N) throw new Error(`read ${n} of ${N}`);
  return Number(process.hrtime.bigint() - t) / N;
}

async function main(): Promise<void> {
  const plain = { req: [] as number[], sub: [] as number[] };
  const sealed = { req: [] as number[], sub: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: [EventStore, typeof plain][] =
      r % 2 === 0
        ? [
            [instant, plain],
            [wrapped, sealed],
          ]
        : [
            [wrapped, sealed],
            [instant, plain],
          ];
    for (const [store, into] of order) {
      into.req.push(await requests(store));
      into.sub.push(await subscription(store));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const row = (label: string, a: number[], b: number[]) =>
    `| ${label} | ${median(a).toFixed(0)} | ${median(b).toFixed(0)} | +${(median(b) - median(a)).toFixed(0)} |`;
  process.stdout.write(
    `${ROUNDS} alternating rounds of ${N}, ns per call (median)\n\n| per | without the wrapper | with it | added |\n|---|---|---|---|\n` +
      `${row('request (2 appends + 1 stream read)', plain.req, sealed.req)}\n${row('event through the subscription', plain.sub, sealed.sub)}\n`,
  );
}

void main();
