import fc from 'fast-check';
import { OutputEnforcer } from '../../../src/inference/enforce';
import { countTokens } from '../../../src/inference/tokenizer';

/** Feeds chunks; returns what was released and how it ended. */
function run(chunks: string[], opts: { maxTokens: number; stop: string[] }, complete = true) {
  const e = new OutputEnforcer(opts);
  const released: string[] = [];
  for (const c of chunks) {
    released.push(e.push(c));
    if (e.finished) break;
  }
  released.push(e.finish(complete));
  return { text: released.join(''), released, reason: e.finished, tokens: e.outputTokens, e };
}

function splitAt(s: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let at = 0;
  for (const p of points) {
    out.push(s.slice(at, p));
    at = p;
  }
  out.push(s.slice(at));
  return out.filter(Boolean);
}

describe('stop strings', () => {
  test('a stop string split across chunk boundaries still stops, and is not sent', () => {
    const r = run(['Hello wor', 'ld! Then ST', 'OP more text'], { maxTokens: 100, stop: ['STOP'] });
    expect(r.text).toBe('Hello world! Then ');
    expect(r.reason).toBe('stop');
    // The "ST" tail was held back, never released before the stop was decided.
    expect(r.released.filter(Boolean).join('|')).toBe('Hello wor|ld! Then ');
  });

  test('a stop string split over many one-character chunks', () => {
    const r = run([...'abc<END>def'], { maxTokens: 100, stop: ['<END>'] });
    expect(r.text).toBe('abc');
    expect(r.released.some((x) => x.includes('<'))).toBe(false);
  });

  test('held-back text that does not become a stop string is released', () => {
    const r = run(['Say S', 'TO', 'p now'], { maxTokens: 100, stop: ['STOP'] });
    expect(r.text).toBe('Say STOp now');
    expect(r.reason).toBeNull(); // ended by the backend
    const tail = run(['ends with ST'], { maxTokens: 100, stop: ['STOP'] });
    expect(tail.text).toBe('ends with ST');
  });

  test('the earliest of several stop strings wins', () => {
    const r = run(['one two\n\nthree', ' four'], { maxTokens: 100, stop: ['four', '\n\n'] });
    expect(r.text).toBe('one two');
  });

  test('property: the reply is the text before the first stop string, whatever the chunking', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', ' ', 'x', 'y', '\n');
    fc.assert(
      fc.property(
        fc.array(alphabet, { minLength: 0, maxLength: 60 }).map((a) => a.join('')),
        fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((a) => a.join('')),
        fc.array(fc.nat(), { maxLength: 20 }),
        (t, stop, cuts) => {
          const r = run(splitAt(t, cuts), { maxTokens: 1000, stop: [stop] });
          const i = t.indexOf(stop);
          expect(r.text).toBe(i >= 0 ? t.slice(0, i) : t);
          expect(r.text.includes(stop)).toBe(false);
          for (let k = 0; k < r.released.length; k++) {
            // Nothing released ever contains the stop string.
            expect(
              r.released
                .slice(0, k + 1)
                .join('')
                .includes(stop),
            ).toBe(false);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('max_tokens', () => {
  const long = 'The quick brown fox jumps over the lazy dog and keeps on running through the fields. '.repeat(30);

  test.each([1, 5, 16, 100, 256])('a longer reply is cut to exactly %i tokens', (max) => {
    for (const chunks of [[long], splitAt(long, [3, 17, 40, 41, 99, 200, 333, 800]), long.split(/(?= )/)]) {
      const r = run(chunks, { maxTokens: max, stop: [] });
      expect(countTokens(r.text)).toBe(max);
      expect(r.tokens).toBe(max);
      expect(long.startsWith(r.text)).toBe(true);
      expect(r.reason).toBe('length');
    }
  });

  test('a reply shorter than max_tokens is left whole', () => {
    const r = run(['Short', ' reply.'], { maxTokens: 100, stop: [] });
    expect(r.text).toBe('Short reply.');
    expect(r.tokens).toBe(countTokens('Short reply.'));
    expect(r.reason).toBeNull();
  });

  test('property: never more than max_tokens, always a prefix of what the backend sent', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('hello', ' world', '!', ' 🙂', '\n', ' it', "'s", ' 123', 'é'), { maxLength: 80 }),
        fc.integer({ min: 1, max: 40 }),
        (parts, max) => {
          const full = parts.join('');
          const r = run(parts, { maxTokens: max, stop: [] });
          expect(full.startsWith(r.text)).toBe(true);
          expect(countTokens(r.text)).toBeLessThanOrEqual(max);
          if (countTokens(full) > max) expect(r.reason).toBe('length');
          // (Counts are not monotonic: a prefix can count more than the whole — " 🙂\n" is 2
          // tokens where " 🙂\n\n" is 1 — so a reply may end at 'length' although the whole fits.)
          if (r.reason !== 'length') expect(r.text).toBe(full);
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('reaching exactly max_tokens does not end the reply when the next chunk merges into the last token', () => {
    const r = run(['\n', '\n'], { maxTokens: 1, stop: [] });
    expect(r.text).toBe('\n\n'); // one token
    expect(r.tokens).toBe(1);
    const cut = run(['\n', '\n', 'Hi'], { maxTokens: 1, stop: [] });
    expect(cut.text).toBe('\n\n');
    expect(cut.reason).toBe('length');
  });

  test('max_tokens and a stop string together: whichever comes first', () => {
    expect(run(['one two three STOP four'], { maxTokens: 2, stop: ['STOP'] }).text).toBe('one two');
    const r = run(['one STOP two three'], { maxTokens: 50, stop: ['STOP'] });
    expect(r.text).toBe('one ');
    expect(r.reason).toBe('stop');
  });
});

test('an interrupted reply is what was already released (held-back text is dropped)', () => {
  const r = run(['Hello there ST'], { maxTokens: 100, stop: ['STOP'] }, false);
  expect(r.text).toBe('Hello there ');
  expect(r.tokens).toBe(countTokens('Hello there '));
});

test('the work per chunk does not grow with the reply: each character is encoded a bounded number of times', () => {
  // Past max_tokens bytes but within max_tokens tokens, streamed word by word: the regime where
  // re-encoding the tail on every chunk was a fifth of the gateway's CPU under slow streams.
  const { Tiktoken } = jest.requireActual<typeof import('tiktoken/lite')>('tiktoken/lite');
  const spy = jest.spyOn(Tiktoken.prototype, 'encode_ordinary');
  try {
    const words = Array.from({ length: 1500 }, (_, i) => (i % 17 === 16 ? '\n' : ' ') + ['alpha', 'beta', 'gamma', 'delta'][i % 4]);
    const reply = words.join('');
    const r = run(words, { maxTokens: 4000, stop: ['STOP'] });
    expect(r.text).toBe(reply);
    expect(r.tokens).toBe(countTokens(reply));
    const encoded = spy.mock.calls.reduce((n, [t]) => n + t.length, 0);
    expect(encoded).toBeLessThan(3 * reply.length);
  } finally {
    spy.mockRestore();
  }
});

test('words seen before are not encoded again: a reply of a few distinct words costs the encoder a few words', () => {
  // The slow-stream profile: encoding each word of every reply (a WebAssembly call, the
  // pre-tokenizer's regex) was most of the enforcer's time; replies repeat their words.
  const { Tiktoken } = jest.requireActual<typeof import('tiktoken/lite')>('tiktoken/lite');
  const words = Array.from({ length: 600 }, (_, i) => (i % 17 === 16 ? '\n' : ' ') + ['kappa', 'lambda', 'sigma', 'omega'][i % 4]);
  const reply = words.join('');
  const expected = countTokens(reply);
  const spy = jest.spyOn(Tiktoken.prototype, 'encode_ordinary');
  try {
    for (let n = 0; n < 3; n++) {
      const r = run(words, { maxTokens: 4000, stop: ['STOP'] });
      expect(r.text).toBe(reply);
      expect(r.tokens).toBe(expected);
    }
    const encoded = spy.mock.calls.reduce((n, [t]) => n + t.length, 0);
    expect(encoded).toBeLessThan(200);
  } finally {
    spy.mockRestore();
  }
});
