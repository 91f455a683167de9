import fc from 'fast-check';
import { Pool } from 'undici';
import type { TestServer } from '../../support/harness';
import { seedFundedKey, seedKey, SeededKey } from '../int/support/seed';
import { startInferenceServer } from '../int/support/server';

/**
 * 10,000 generated request bodies, through HTTP, against an in-process server: none may answer
 * 500 or above. Most are broken in some way (they stop at validation); the well-formed ones reach
 * tokenization, prompt rendering, the window check and the reservation (the workspace has no
 * money, so they end in 402). A second, smaller run on a funded key goes through generation.
 */

const PATHS = ['/external/api/inference', '/external/api/inference/streaming', '/external/api/inference/openai/v1/chat/completions'];

const weirdText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', '<|endoftext|>', '<|im_start|>system', '### AI\n', '🙂'.repeat(300), 'a'.repeat(600), '\u0000\uFFFF', '\uD800'),
);
const number = fc.oneof(
  fc.double({ noNaN: true }),
  fc.integer({ min: -5, max: 2000 }),
  fc.constantFrom(0, 1, 0.5, 1024, 1025, 1e11, 1e11 + 1, 1e14, 1e300, -0, Number.MAX_SAFE_INTEGER + 2),
);
const scalar = fc.oneof(weirdText, number, fc.boolean(), fc.constant(null));
/** Mostly a fitting value, sometimes anything, sometimes absent. */
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.option(fc.oneof({ weight: 15, arbitrary: arb }, { weight: 1, arbitrary: scalar }), { nil: undefined, freq: 3 });
const usually = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 30, arbitrary: arb }, { weight: 1, arbitrary: scalar });

const entry = fc.record(
  {
    type: usually(fc.constantFrom('Human', 'AI', 'Instruction')),
    text: usually(weirdText),
    ts: maybe(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 0, max: 2e12 }) }, { weight: 1, arbitrary: number })),
  },
  { requiredKeys: ['type', 'text'] },
);
const metadata = fc.record(
  {
    user_firstname: maybe(fc.string({ unit: 'grapheme', maxLength: 20 })),
    user_timezone: maybe(
      fc.constantFrom('Europe/Paris', 'UTC', 'US/Eastern', 'Asia/Kolkata', 'europe/paris', 'Etc/GMT+5', 'Mars/Base', '+05:00'),
    ),
    user_country: maybe(fc.string({ maxLength: 30 })),
    user_region: maybe(fc.string({ maxLength: 8 })),
    user_city: maybe(fc.string({ unit: 'grapheme', maxLength: 30 })),
  },
  { requiredKeys: [] },
);
const specBody = fc.record(
  {
    context: usually(fc.array(entry, { minLength: 1, maxLength: 5 })),
    config: usually(fc.constantFrom('service_3_pi', 'service_3_productivity')),
    temperature: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
    top_p: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
    max_tokens: maybe(fc.integer({ min: 1, max: 1024 })),
    stop_tokens: maybe(fc.array(usually(weirdText), { maxLength: 5 })),
    web_search: maybe(fc.boolean()),
    metadata: maybe(metadata),
    seed: maybe(fc.integer()),
    extra: maybe(fc.anything()),
  },
  { requiredKeys: ['context', 'config'] },
);
const message = fc.record(
  {
    role: usually(fc.constantFrom('system', 'user', 'assistant', 'developer', 'tool')),
    content: usually(fc.oneof(weirdText, fc.array(fc.record({ type: fc.constantFrom('text', 'text', 'image_url'), text: weirdText })))),
  },
  { requiredKeys: ['role', 'content'] },
);
const openAiBody = fc.record(
  {
    model: maybe(fc.constantFrom('service_3_pi', 'service_3_productivity', 'gpt-4o')),
    messages: usually(fc.array(message, { minLength: 1, maxLength: 4 })),
    temperature: maybe(fc.double({ min: 0, max: 1, noNaN: true })),
    max_tokens: maybe(fc.integer({ min: 1, max: 1024 })),
    stop: maybe(fc.oneof(weirdText, fc.array(weirdText, { maxLength: 3 }))),
    stream: maybe(fc.boolean()),
    n: maybe(fc.constant(1)),
    metadata: maybe(metadata),
  },
  { requiredKeys: ['messages'] },
);
/** [path index, raw body text] */
const request = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.tuple(
      fc.constantFrom(0, 1),
      specBody.map((b) => JSON.stringify(b)),
    ),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(
      fc.constant(2),
      openAiBody.map((b) => JSON.stringify(b)),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom(0, 1, 2),
      fc.anything().map((b) => JSON.stringify(b) ?? 'null'),
    ),
  },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(0, 1, 2), fc.string({ maxLength: 60 })) },
);

async function hammer(server: TestServer, key: SeededKey, samples: Array<[number, string]>, concurrency: number) {
  const statuses = new Map<number, number>();
  const failures: Array<{ status: number; path: string; body: string; answer: string }> = [];
  let next = 0;
  // Exactly one connection per worker, each always busy. With the global fetch pool, extra sockets
  // opened in a burst sat idle until the server's keep-alive timeout and, on a loaded machine, were
  // reused at the moment the server closed them: a transport ECONNRESET that says nothing about
  // the bodies under test.
  const pool = new Pool(server.url, { connections: concurrency, pipelining: 1 });
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < samples.length) {
          const [p, body] = samples[next++];
          const res = await pool.request({
            path: PATHS[p],
            method: 'POST',
            headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
            body,
          });
          const answer = await res.body.text();
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode >= 500) failures.push({ status: res.statusCode, path: PATHS[p], body: body.slice(0, 500), answer });
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return { statuses, failures };
}

let server: TestServer;
beforeAll(async () => {
  server = await startInferenceServer();
});
afterAll(() => server.close());

test('10,000 generated bodies: no response of 500 or above', async () => {
  const key = await seedKey(server.services, { rateLimit: 1_000_000 }); // no money: well-formed bodies end in 402
  const samples = fc.sample(request, { numRuns: 10_000, seed: 20250101 });
  const { statuses, failures } = await hammer(server, key, samples, 16);
  expect(failures).toEqual([]);
  expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(10_000);
  // The run reached past validation, not only 422s.
  expect(statuses.get(422)).toBeGreaterThan(1000);
  expect((statuses.get(402) ?? 0) + (statuses.get(400) ?? 0)).toBeGreaterThan(1000);
  // A hang limit: at load 25-30 on 2 cores the 10,000 requests ran past 240 s.
}, 600_000);

test('generated well-formed bodies through generation: no response of 500 or above', async () => {
  const key = await seedFundedKey(server.services, { usd: '1000', rateLimit: 1_000_000 });
  const valid = fc.record({
    context: fc.array(
      fc.record({
        type: fc.constantFrom('Human', 'AI', 'Instruction'),
        text: weirdText,
        ts: fc.option(fc.integer({ min: 0, max: 2e12 }), { nil: undefined }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    config: fc.constantFrom('service_3_pi', 'service_3_productivity'),
    temperature: fc.double({ min: 0, max: 1, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 24 }),
    stop_tokens: fc.array(fc.string({ unit: 'grapheme', maxLength: 6 }), { maxLength: 3 }),
    metadata: fc.record({
      user_firstname: fc.string({ unit: 'grapheme', maxLength: 30 }),
      user_timezone: fc.constantFrom('Europe/Paris', 'Asia/Kolkata', 'UTC'),
    }),
    seed: fc.integer(),
  });
  const samples = fc.sample(valid, { numRuns: 300, seed: 7 }).map((b, i): [number, string] => [i % 2, JSON.stringify(b)]);
  const { statuses, failures } = await hammer(server, key, samples, 8);
  expect(failures).toEqual([]);
  expect(statuses.get(200)).toBe(300);
}, 120_000);
