import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';
import { get_encoding } from 'tiktoken';
import { countTokens, encode, IncrementalCounter, truncateToTokens } from '../../../src/inference/tokenizer';

const reference = get_encoding('cl100k_base');
afterAll(() => reference.free());

// Text made of pieces that stress the pre-tokenizer's boundaries.
const piece = fc.constantFrom(
  ' ',
  '  ',
  '\n',
  '\n\n',
  ' \n',
  'hello',
  ' world',
  'Hello',
  "'s",
  "n't",
  '!',
  '?!',
  '...',
  ' 42',
  '12345',
  'é',
  ' café',
  '🙂',
  '👋🏽',
  ' 🎉',
  'ß',
  '中文',
  '\t',
  '<|endoftext|>',
  'a',
  'I',
  ' a',
  '-',
  '—',
  '"',
  '(x)',
  ' JSON',
  '{"k": 1}',
);
const text = fc.array(piece, { maxLength: 80 }).map((p) => p.join(''));

/** Splits a string into chunks at the given cut points (never inside a surrogate pair). */
function chunk(s: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => c % (s.length + 1)))]
    .filter((c) => !(s.charCodeAt(c - 1) >= 0xd800 && s.charCodeAt(c - 1) <= 0xdbff))
    .sort((a, b) => a - b);
  const out: string[] = [];
  let at = 0;
  for (const p of points) {
    out.push(s.slice(at, p));
    at = p;
  }
  out.push(s.slice(at));
  return out;
}

describe('tokenizer (cl100k_base)', () => {
  test('counts ordinary text exactly as tiktoken does, special-token text included', () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(countTokens(t)).toBe(reference.encode_ordinary(t).length);
      }),
      { numRuns: 300 },
    );
    expect(countTokens('<|endoftext|>')).toBeGreaterThan(1); // text, not the special token
  });

  test('the incremental count of a growing text equals the count of the whole, however it is chunked', () => {
    const long = fc.array(piece, { minLength: 50, maxLength: 400 }).map((p) => p.join(''));
    fc.assert(
      fc.property(fc.oneof(text, long), fc.array(fc.nat(), { maxLength: 60 }), (t, cuts) => {
        const c = new IncrementalCounter();
        let sofar = '';
        for (const part of chunk(t, cuts)) {
          c.push(part);
          sofar += part;
          expect(c.count()).toBe(reference.encode_ordinary(sofar).length);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('pathological runs are counted in linear time', () => {
    // CPU time, not wall time: other work on a busy machine stretches the wall clock, not this.
    const started = process.cpuUsage();
    for (const run of ['🙂'.repeat(40000), 'a'.repeat(100000), ' '.repeat(100000), '='.repeat(100000)]) {
      expect(countTokens(run)).toBeGreaterThan(0);
    }
    const { user, system } = process.cpuUsage(started);
    expect((user + system) / 1000).toBeLessThan(3000);
  });

  test('truncateToTokens keeps exactly the first n tokens of plain text, never half a character', () => {
    const t = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
    for (const n of [1, 2, 7, 50, 100]) {
      const cut = truncateToTokens(t, n);
      expect(t.startsWith(cut)).toBe(true);
      expect(countTokens(cut)).toBe(n);
    }
    const emoji = '🙂🙂🙂'; // two tokens each
    const cut = truncateToTokens(emoji, 3);
    expect(cut).toBe('🙂');
    expect(cut).not.toContain('\uFFFD');
    expect(encode('')).toHaveLength(0);
  });
});

describe('tokenizer memory', () => {
  // The full tiktoken module's WebAssembly embeds every encoding (5.6 MB) and grows its memory to
  // 22.7 MB building one; the lite module built from the cl100k_base ranks alone holds 14.2 MB.
  test('builds cl100k_base from its ranks alone: the WebAssembly of every encoding is never loaded', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--require',
        'tsx/cjs',
        '-e',
        `const t = require(${JSON.stringify(join(__dirname, '../../../src/inference/tokenizer.ts'))});
         const n = t.countTokens('Hello, world');
         const full = Object.keys(require.cache).filter((k) => /tiktoken[\\\\/]tiktoken_bg\\.c?js$/.test(k));
         process.stdout.write(JSON.stringify({ n, full }));`,
      ],
      { encoding: 'utf8', cwd: join(__dirname, '../../..') },
    );
    expect(JSON.parse(out)).toEqual({ n: reference.encode_ordinary('Hello, world').length, full: [] });
  });
});
