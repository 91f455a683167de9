import { DomainError } from '../../../src/platform/errors';
import type { GenerateParams, ModelBackend } from '../../../src/inference/backend';
import type { InferenceRequest } from '../../../src/inference/request';
import type { Reservations } from '../../../src/billing/projections/balances/reservations';
import type { KeyRecord } from '../../../src/accounts/projections/key-index/queries';
import type { Services } from '../../../src/services';
import { EngineOptions, InferenceEngine } from '../../../src/inference/usecases/engine';

/**
 * The engine is a use case: its refusals are DomainErrors (the api maps them to HTTP in one place)
 * and it samples with the seed hash it is given, not with a backend's own code.
 */
const key: KeyRecord = { keyId: 'k1', workspaceId: 'ws1', name: 'main', scopes: ['inference'], expiresAt: null, rateLimit: null };
const request: InferenceRequest = {
  config: 'service_3_pi',
  context: [{ type: 'Human', text: 'Hello there' }],
  temperature: 1,
  topP: 0.95,
  maxTokens: 16,
  stop: [],
  webSearch: false,
  metadata: {},
  seed: 7,
};

function engine(over: { reserve?: Reservations['reserve']; backend?: ModelBackend; seedHash?: (t: string) => number } = {}) {
  const appended: unknown[] = [];
  let n = 0;
  const s = {
    now: () => new Date('2026-01-01T00:00:00Z'),
    newId: () => `id-${++n}`,
    log: { warn: () => undefined, error: () => undefined },
    metrics: { inferenceFinished: () => undefined },
    store: {
      append: async (stream: string, events: unknown[]) => {
        appended.push({ stream, events });
        return { nextExpectedRevision: 0n, position: 1n };
      },
    },
  } as unknown as Services;
  const reservations = {
    reserve: over.reserve ?? (async () => ({ ok: true, balance: 10n ** 12n, held: 0n })),
    release: async () => undefined,
    markPending: async () => undefined,
  } as unknown as Reservations;
  const opts: EngineOptions = {
    backend: over.backend ?? ({ kind: 'fake', modelName: () => 'fake', generate: async function* () {} } as unknown as ModelBackend),
    reservations,
    prices: { inputNanoUsdPerToken: 1000n, outputNanoUsdPerToken: 2000n },
    timeoutMs: 5000,
    searchTimeoutMs: 100,
    seedHash: over.seedHash ?? (() => 1),
  };
  return { engine: new InferenceEngine(s, opts), appended };
}

const prepare = (e: InferenceEngine, r: InferenceRequest = request) =>
  e.prepare({ requestId: 'r1', key, endpoint: 'inference', request: r });

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  return err as DomainError;
}

describe('InferenceEngine refusals are DomainErrors', () => {
  it('a prompt longer than the window can hold: bad_request, naming the length', async () => {
    const err = await refusal(prepare(engine().engine, { ...request, context: [{ type: 'Human', text: 'x'.repeat(200_000) }] }));
    expect(err.code).toBe('bad_request');
    expect(err.message).toMatch(/^This model's maximum context length is 8192 tokens\. However, the prompt is \d+ characters long/);
  });

  it('prompt + max_tokens over the window: bad_request', async () => {
    const err = await refusal(
      prepare(engine().engine, { ...request, maxTokens: 1024, context: [{ type: 'Human', text: 'word '.repeat(7600) }] }),
    );
    expect(err.code).toBe('bad_request');
  });

  it('balance too low: payment_required with the amounts', async () => {
    const { engine: e } = engine({ reserve: async () => ({ ok: false, balance: 5n, held: 0n, available: 1_000_000n }) });
    const err = await refusal(prepare(e));
    expect(err.code).toBe('payment_required');
    expect(err.message).toMatch(/^Insufficient balance: 0\.001 USD available, [\d.]+ USD required$/);
  });

  it('a key over its monthly budget: payment_required naming the key', async () => {
    const { engine: e } = engine({
      reserve: async () => ({
        ok: false,
        balance: 10n ** 12n,
        held: 0n,
        available: 10n ** 12n,
        budget: { scope: 'key', period: 'daily', budget: 10n ** 9n, spent: 10n ** 9n, heldByOthers: 0n },
      }),
    });
    const err = await refusal(prepare(e));
    expect(err.code).toBe('payment_required');
    expect(err.message).toContain('main');
    expect(err.message).toMatch(/daily budget of 1 USD with 0 USD left today \(UTC\).*resets at \d{4}-\d\d-\d\dT00:00:00\.000Z/);
    expect(err.fields).toMatchObject({ budget: { scope: 'key', period: 'daily', limit: '1', remaining: '0' } });
  });

  it('balances that cannot be read: unavailable, and nothing is appended', async () => {
    const { engine: e, appended } = engine({
      reserve: async () => {
        throw new Error('ECONNREFUSED');
      },
    });
    const err = await refusal(prepare(e));
    expect(err.code).toBe('unavailable');
    expect(err.message).toBe('Service temporarily unavailable: balances cannot be read');
    expect(appended).toEqual([]);
  });
});

describe('InferenceEngine sampling seed', () => {
  it('comes from the seedHash it was given, over the seed source and the prompt', async () => {
    const hashed: string[] = [];
    const seen: GenerateParams[] = [];
    const backend = {
      kind: 'fake',
      modelName: () => 'fake',
      async *generate(p: GenerateParams) {
        seen.push(p);
        yield 'hi';
        return 'stop' as const;
      },
    } as unknown as ModelBackend;
    const { engine: e } = engine({
      backend,
      seedHash: (t) => {
        hashed.push(t);
        return 424242;
      },
    });
    const p = await prepare(e);
    const out = await e.execute(p, { signal: new AbortController().signal, onText: () => undefined, streaming: false });
    expect(out.recorded).toBe(true);
    expect(hashed).toEqual([`seed:7\u0000${p.prompt.text}`]);
    expect(seen[0].seed).toBe(424242);
    expect(seen[0].requestSeed).toBe(7);
  });
});
