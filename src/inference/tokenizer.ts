import { readFileSync } from 'node:fs';
import { Tiktoken } from 'tiktoken/lite';

/**
 * cl100k_base token counting, the one measure of prompts and replies (what is enforced and billed).
 *
 * - The encoding is loaded once per process (about 0.2–0.8 s) and reused; `free()` only at exit.
 *   It is built with tiktoken's "lite" module from the cl100k_base ranks alone: the full module's
 *   WebAssembly embeds every encoding tiktoken knows (5.6 MB) and its memory grows to 22.7 MB
 *   while building one, against 1.1 MB and 14.2 MB here (same ranks, the same tokens).
 * - Text is encoded as ordinary text: a caller who writes "<|endoftext|>" gets it counted as the
 *   characters it is, never as a special token (and never an exception).
 * - tiktoken's byte-pair merge is quadratic in the length of one pre-tokenized piece: 50 000
 *   emoji in a row take seconds. Runs of more than LONG_RUN letters, symbols or spaces are
 *   therefore encoded in slices of RUN_SLICE code points. Ordinary text never contains such a run
 *   and is counted exactly as tiktoken counts it; a pathological run is counted as its slices
 *   (about the same number of tokens). Counting stays linear in the text's length.
 */

const LONG_RUN = 256;
const RUN_SLICE = 64;
const LONG_RUN_RE = new RegExp(`\\p{L}{${LONG_RUN},}|[^\\s\\p{L}\\p{N}]{${LONG_RUN},}|\\s{${LONG_RUN},}`, 'gu');

let shared: Tiktoken | null = null;

function encoding(): Tiktoken {
  if (!shared) {
    // Read, not require()d: the 1 MB JSON is not kept in the module cache once the ranks are built.
    const ranks = JSON.parse(readFileSync(require.resolve('tiktoken/encoders/cl100k_base.json'), 'utf8')) as {
      bpe_ranks: string;
      special_tokens: Record<string, number>;
      pat_str: string;
    };
    shared = new Tiktoken(ranks.bpe_ranks, ranks.special_tokens, ranks.pat_str);
  }
  return shared;
}

/** Loads the encoding now (start-up) rather than on the first request. */
export function warmTokenizer(): void {
  encoding();
}

function concat(parts: Uint32Array[]): Uint32Array {
  if (parts.length === 1) return parts[0];
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint32Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Characters and calls encode() has seen in this process: what counting cost, for tests that bound it. */
export const encoderWork = { calls: 0, chars: 0 };

/** cl100k_base tokens of `text` (see the note above on pathological runs). */
export function encode(text: string): Uint32Array {
  encoderWork.calls++;
  encoderWork.chars += text.length;
  if (text.length === 0) return new Uint32Array(0);
  const enc = encoding();
  if (text.length < LONG_RUN) return enc.encode_ordinary(text);
  LONG_RUN_RE.lastIndex = 0;
  let m = LONG_RUN_RE.exec(text);
  if (!m) return enc.encode_ordinary(text);
  const parts: Uint32Array[] = [];
  let at = 0;
  while (m) {
    if (m.index > at) parts.push(enc.encode_ordinary(text.slice(at, m.index)));
    const cps = Array.from(m[0]);
    for (let i = 0; i < cps.length; i += RUN_SLICE) parts.push(enc.encode_ordinary(cps.slice(i, i + RUN_SLICE).join('')));
    at = m.index + m[0].length;
    m = LONG_RUN_RE.exec(text);
  }
  if (at < text.length) parts.push(enc.encode_ordinary(text.slice(at)));
  return concat(parts);
}

export function countTokens(text: string): number {
  return encode(text).length;
}

/**
 * The longest prefix of `text` that is at most `maxTokens` tokens: the first maxTokens tokens
 * decoded, without a trailing partial UTF-8 character, shortened further in the rare case that
 * re-encoding the prefix counts more.
 */
export function truncateToTokens(text: string, maxTokens: number): string {
  const tokens = encode(text);
  if (tokens.length <= maxTokens) return text;
  const enc = encoding();
  let keep = maxTokens;
  for (;;) {
    const bytes = enc.decode(tokens.subarray(0, keep));
    const prefix = decodeCompleteUtf8(bytes);
    if (keep <= 0 || countTokens(prefix) <= maxTokens) return prefix;
    keep -= 1;
  }
}

/** UTF-8 bytes → string, dropping an incomplete character at the end (never a U+FFFD there). */
function decodeCompleteUtf8(bytes: Uint8Array): string {
  let end = bytes.length;
  // Walk back over at most 3 continuation bytes to the start of the last character.
  let i = end - 1;
  let cont = 0;
  while (i >= 0 && cont < 3 && (bytes[i] & 0xc0) === 0x80) {
    i--;
    cont++;
  }
  if (i >= 0) {
    const lead = bytes[i];
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - i < need) end = i;
  }
  return new TextDecoder().decode(bytes.subarray(0, end));
}

const LETTER = /\p{L}/u;
const SPACE = /\s/;

/**
 * Whether cl100k_base's pre-tokenizer always starts a new piece at `p`, whatever follows:
 * - " word": text[p] is a space, text[p-1] is not whitespace and text[p+1] is a letter;
 * - after a line break: text[p-1] is "\n" and text[p] is not whitespace.
 * No piece crosses such a position, so count(text) = count(text[..p]) + count(text[p..]).
 */
function isHardBoundary(t: string, p: number): boolean {
  const c = t.charCodeAt(p);
  if (c === 32) return p + 1 < t.length && !SPACE.test(t[p - 1]) && LETTER.test(t[p + 1]);
  return t.charCodeAt(p - 1) === 10 && !SPACE.test(t[p]);
}

/** Words (text between hard boundaries) of at most this many characters are remembered. */
const WORD_MAX_CHARS = 32;
/** Per generation of the word cache: the hot words survive a turnover, the rest are dropped. */
const WORD_CACHE_ENTRIES = 4096;
let words = new Map<string, number>();
let oldWords = new Map<string, number>();

/**
 * Tokens of one word (a text with no hard boundary inside, or any text), remembered while it is
 * used: a reply is mostly words seen before, and a lookup costs far less than a call into the
 * encoder (which copies the string into WebAssembly memory and runs the pre-tokenizer's regex).
 */
function countWord(word: string): number {
  if (word.length > WORD_MAX_CHARS) return countTokens(word);
  let n = words.get(word);
  if (n !== undefined) return n;
  n = oldWords.get(word) ?? countTokens(word);
  if (words.size >= WORD_CACHE_ENTRIES) {
    oldWords = words;
    words = new Map();
  }
  words.set(word, n);
  return n;
}

/**
 * Tokens of t[0..end), where `end` is a hard boundary and positions 1..from-1 are known to hold
 * none: the sum of its words' counts (cut at the hard boundaries in [from, end)).
 */
function countPieces(t: string, from: number, end: number): number {
  let total = 0;
  let start = 0;
  for (let p = Math.max(1, from); p < end; p++) {
    if (isHardBoundary(t, p)) {
      total += countWord(t.slice(start, p));
      start = p;
    }
  }
  return total + countWord(t.slice(start, end));
}

/**
 * Counts a growing text (a reply as it streams) without re-encoding it: the part before the tail's
 * last hard boundary is counted once and dropped; only the tail (usually the last word) is kept.
 * Each character is scanned for boundaries once, so the work per chunk does not grow with the
 * text so far. A text without hard boundaries (a run of CJK, a long token-like string) keeps a
 * growing tail: `exceeds` then encodes it, which a reply cut at max_tokens bounds.
 */
export class IncrementalCounter {
  private tail = '';
  private tailBytes = 0;
  private tailCount = -1;
  private stableCount = 0;
  /** Tail positions before this were scanned for a hard boundary already. */
  private scanned = 1;

  push(chunk: string): void {
    if (!chunk) return;
    this.tail += chunk;
    this.tailBytes += Buffer.byteLength(chunk);
    this.tailCount = -1;
  }

  /** Replaces the whole text (after a cut): counted again from the start when next asked. */
  reset(text: string): void {
    this.tail = text;
    this.tailBytes = Buffer.byteLength(text);
    this.tailCount = -1;
    this.stableCount = 0;
    this.scanned = 1;
  }

  /** Drops the last `n` characters, if they are still in the tail; false if they are not (then `reset`). */
  dropLast(n: number): boolean {
    if (n === 0) return true;
    if (n > this.tail.length) return false;
    const dropped = this.tail.slice(this.tail.length - n);
    this.tail = this.tail.slice(0, this.tail.length - n);
    this.tailBytes -= Buffer.byteLength(dropped);
    this.tailCount = -1;
    this.scanned = Math.min(this.scanned, Math.max(1, this.tail.length - 1));
    return true;
  }

  /** Moves the tail up to its last hard boundary into the counted part. */
  private settle(): void {
    const t = this.tail;
    for (let p = t.length - 2; p >= this.scanned; p--) {
      if (isHardBoundary(t, p)) {
        const head = t.slice(0, p);
        this.stableCount += countPieces(t, this.scanned, p);
        this.tail = t.slice(p);
        this.tailBytes -= Buffer.byteLength(head);
        this.tailCount = -1;
        // Every position after p was scanned just now, without a boundary.
        this.scanned = Math.max(1, this.tail.length - 1);
        return;
      }
    }
    this.scanned = Math.max(1, t.length - 1);
  }

  count(): number {
    this.settle();
    if (this.tailCount < 0) this.tailCount = countWord(this.tail);
    return this.stableCount + this.tailCount;
  }

  /**
   * count() > limit, encoding as little as it can: a token is at least one byte, so while the
   * counted part plus the tail's bytes stays within the limit nothing is encoded.
   */
  exceeds(limit: number): boolean {
    if (this.stableCount + this.tailBytes <= limit) return false;
    this.settle();
    if (this.stableCount + this.tailBytes <= limit) return false;
    return this.count() > limit;
  }
}

/** The UTF-8 bytes of tokens (a token may hold part of a character: decode with a streaming TextDecoder). */
export function tokenBytes(tokens: Uint32Array): Uint8Array {
  return encoding().decode(tokens);
}

const segmentCache = new Map<string, number>();
const CACHE_ENTRIES = 2000;
const CACHE_MAX_CHARS = 8192;

/**
 * Tokens of a text given as segments cut at hard boundaries (see isHardBoundary): the sum of the
 * segments' counts, each remembered for a while. A conversation re-sends its earlier turns with
 * every new one, and the persona is the same for every request: those are not encoded again.
 */
export function countSegments(segments: string[]): number {
  let total = 0;
  for (const seg of segments) {
    let n = segmentCache.get(seg);
    if (n === undefined) {
      n = countTokens(seg);
      if (seg.length <= CACHE_MAX_CHARS) {
        if (segmentCache.size >= CACHE_ENTRIES) segmentCache.delete(segmentCache.keys().next().value as string);
        segmentCache.set(seg, n);
      }
    } else {
      // Most recently used last.
      segmentCache.delete(seg);
      segmentCache.set(seg, n);
    }
    total += n;
  }
  return total;
}
