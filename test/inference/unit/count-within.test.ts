import { countWithin, slicesOf } from '../../../src/inference/count-within';
import { CONTEXT_WINDOW_TOKENS } from '../../../src/inference/metering';
import { renderPrompt } from '../../../src/inference/prompt';
import { countRequest } from '../../../src/inference/usecases/count';
import { countTokens, encoderWork } from '../../../src/inference/tokenizer';

/** A small deterministic generator (mulberry32): the same texts on every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PARTS = [
  'word',
  'Word',
  ' the',
  ' quick',
  "'s",
  "n't",
  "'LL",
  ' ',
  '  ',
  '\n',
  '\n\n',
  '\r\n',
  '\t',
  '123',
  '4567',
  '3.14',
  '!',
  '?!',
  '...',
  '—',
  '«',
  ')',
  'é',
  'e\u0301',
  'ß',
  '日本語',
  '漢字。',
  'Привет',
  'مرحبا',
  '🙂',
  '👍🏽',
  '𝐀𝐁',
  '\u{20000}',
  'x'.repeat(300),
  '='.repeat(260),
  ' '.repeat(270),
  '9'.repeat(40),
];

function text(rnd: () => number, length: number): string {
  let t = '';
  while (t.length < length) t += PARTS[Math.floor(rnd() * PARTS.length)];
  return t;
}

describe('counting in slices (finding F-3)', () => {
  test('the slices of a text add up to its count exactly, wherever they are cut', () => {
    const rnd = random(33);
    for (let i = 0; i < 150; i++) {
      const t = text(rnd, 200 + Math.floor(rnd() * 3000));
      const size = 1 + Math.floor(rnd() * 400);
      const slices = [...slicesOf(t, size)];
      expect(slices.join('')).toBe(t);
      const sum = slices.reduce((n, s) => n + countTokens(s), 0);
      if (sum !== countTokens(t)) throw new Error(`slices of ${size} of ${JSON.stringify(t)} count ${sum}, not ${countTokens(t)}`);
    }
  });

  test('a prompt that fits is counted exactly; one that does not stops past the limit', () => {
    const rnd = random(7);
    const segments = [text(rnd, 5000), text(rnd, 20_000), 'short']; // slices of 64 below: many cuts
    const exact = segments.reduce((n, s) => n + countTokens(s), 0);
    expect(countWithin(segments, exact, 64)).toBe(exact);
    expect(countWithin(segments, exact - 1, 64)).toBeNull();
  });

  test('a prompt far over the window costs no more than counting the largest admissible prompt', () => {
    const sentence = 'The committee reviewed the quarterly figures and asked for a revised forecast by Friday. ';
    const long = sentence.repeat(Math.ceil(128_000 / sentence.length)).slice(0, 128_000);
    const request = {
      config: 'service_3_pi' as const,
      context: [{ type: 'Human' as const, text: long }],
      temperature: 1,
      topP: 0.95,
      maxTokens: 256,
      stop: [],
      webSearch: false,
      metadata: {},
    };
    const now = new Date('2026-11-28T12:00:00Z');
    // The largest admissible prompt of this text: as many characters as fit CONTEXT_WINDOW_TOKENS.
    const tokensPerChar = countTokens(long) / long.length;
    const admissibleChars = CONTEXT_WINDOW_TOKENS / tokensPerChar;
    expect(renderPrompt({ config: request.config, context: request.context, metadata: {}, now }).text.length).toBeGreaterThan(
      2 * admissibleChars,
    );

    const before = { ...encoderWork };
    const counted = countRequest(request, { inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n }, now);
    const chars = encoderWork.chars - before.chars;
    expect(counted).toMatchObject({ prompt_tokens: null, fits: false, max_cost: null });
    // At most one slice (4,096 characters) past the admissible prompt, where all 128,000 were encoded.
    expect(chars).toBeLessThanOrEqual(admissibleChars + 2 * 4096);
  });
});
