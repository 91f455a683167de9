import { countSegments, countTokens } from './tokenizer';

/**
 * Counting a prompt only as far as it can still fit: the free token-count route must not cost more
 * than counting the largest prompt the window admits, however long the body (finding F-3: 128,000
 * characters cost about 130 ms of CPU per call). A long segment is counted in slices cut where
 * cl100k_base's pre-tokenizer always cuts, so the slices' counts add up to the segment's exactly, and
 * counting stops as soon as the sum passes the limit.
 */

/** Slices of about this many characters: a few dozen encoder calls for the largest admissible prompt. */
export const SLICE_CHARS = 4096;

const LETTER = /\p{L}/u;
const DIGIT = /\p{N}/u;
const SPACE = /\s/;

/**
 * Whether no pre-tokenizer piece, and none of encode()'s long runs, crosses position p (0 < p < length):
 * - a letter, then a non-letter: the letters' piece ends there (contractions end with a letter too);
 * - a digit, then a non-digit: digits are pieces of their own (1-3 digits from the run's start);
 * - " word" after a non-space, or anything but whitespace after "\n" (tokenizer.ts, isHardBoundary).
 * Whitespace is never the last character before a cut: the "\s+(?!\S)" piece looks past it.
 */
export function isSafeCut(t: string, p: number): boolean {
  if (isHighSurrogate(t.charCodeAt(p - 1))) return false; // inside a character
  const before = charEndingAt(t, p);
  const at = charAt(t, p);
  if (LETTER.test(before)) return !LETTER.test(at);
  if (DIGIT.test(before)) return !DIGIT.test(at);
  if (at === ' ') return !SPACE.test(before) && p + 1 < t.length && LETTER.test(charAt(t, p + 1));
  return before === '\n' && !SPACE.test(at);
}

// Whole characters: \p{L} on one half of a surrogate pair is false.
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
const charAt = (t: string, p: number) => String.fromCodePoint(t.codePointAt(p)!);
const charEndingAt = (t: string, p: number) =>
  p >= 2 && isLowSurrogate(t.charCodeAt(p - 1)) && isHighSurrogate(t.charCodeAt(p - 2)) ? t.slice(p - 2, p) : t[p - 1];

/**
 * `text` cut into slices of at least `size` characters at safe cuts (the first one at or after
 * `size`); a stretch without one stays whole. count(text) = Σ count(slice), exactly.
 */
export function* slicesOf(text: string, size = SLICE_CHARS): Generator<string> {
  let start = 0;
  while (text.length - start > size) {
    let p = start + size;
    while (p < text.length && !isSafeCut(text, p)) p++;
    if (p >= text.length) break;
    yield text.slice(start, p);
    start = p;
  }
  yield text.slice(start);
}

/**
 * The prompt's tokens when they are at most `limit`, else null (the count stopped once past it).
 * Short segments go through countSegments and its cache, so an answer that fits is the engine's count.
 */
export function countWithin(segments: readonly string[], limit: number, size = SLICE_CHARS): number | null {
  let total = 0;
  for (const seg of segments) {
    if (seg.length <= size) total += countSegments([seg]);
    else {
      for (const slice of slicesOf(seg, size)) {
        total += countTokens(slice);
        if (total > limit) return null;
      }
    }
    if (total > limit) return null;
  }
  return total;
}
