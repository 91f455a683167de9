import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import type { ModelConfig } from '../events';
import type { BackendFinish, GenerateParams, ModelBackend } from '../backend';
import { encode, tokenBytes } from '../tokenizer';
import { PI_CORPUS, PRODUCTIVITY_CORPUS } from './corpus';

/**
 * The built-in demo model: a token-level trigram model (backing off to bigrams and unigrams) over
 * cl100k_base tokens, built at start from the short corpus shipped in ./corpus.ts, so the service
 * runs with no model server. It is a demo, and says so: its model name is "tollgate-demo".
 *
 * Sampling honours temperature (weights ^ 1/T) and top_p (the smallest set of most likely tokens
 * whose mass reaches top_p), draws with a seeded PRNG (deterministic for a given seed), and is
 * greedy at temperature 0 (or top_p 0). Words of the user's last turn are favoured a little, and
 * the conversational config mirrors the user's emoji.
 */

const EOS = -1;
const BOS = -2;
const TOPIC_BOOST = 3;

interface Dist {
  tokens: number[];
  weights: number[];
}

export class NgramModel {
  private readonly tri = new Map<string, Dist>();
  private readonly bi = new Map<number, Dist>();
  private readonly uni: Dist = { tokens: [], weights: [] };

  constructor(corpus: string) {
    const replies = corpus
      .split(/\n\s*\n/)
      .map((r) => r.trim())
      .filter(Boolean);
    const add = (d: Dist, t: number) => {
      const i = d.tokens.indexOf(t);
      if (i >= 0) d.weights[i] += 1;
      else {
        d.tokens.push(t);
        d.weights.push(1);
      }
    };
    for (const reply of replies) {
      const toks = [BOS, BOS, ...encode(reply), EOS];
      for (let i = 2; i < toks.length; i++) {
        const [a, b, c] = [toks[i - 2], toks[i - 1], toks[i]];
        const k = `${a},${b}`;
        if (!this.tri.has(k)) this.tri.set(k, { tokens: [], weights: [] });
        add(this.tri.get(k)!, c);
        if (!this.bi.has(b)) this.bi.set(b, { tokens: [], weights: [] });
        add(this.bi.get(b)!, c);
        add(this.uni, c);
      }
    }
  }

  distribution(a: number, b: number): Dist {
    return this.tri.get(`${a},${b}`) ?? this.bi.get(b) ?? this.uni;
  }

  /** One token: greedy at temperature 0 / top_p 0, else temperature + nucleus sampling. */
  static sample(d: Dist, temperature: number, topP: number, rand: () => number, boost?: Set<number>): number {
    const w = d.weights.map((x, i) => (boost?.has(d.tokens[i]) ? x * TOPIC_BOOST : x));
    if (temperature <= 0 || topP <= 0) {
      let best = 0;
      for (let i = 1; i < w.length; i++) if (w[i] > w[best]) best = i;
      return d.tokens[best];
    }
    const logits = w.map((x) => Math.log(x) / temperature);
    const max = Math.max(...logits);
    const p = logits.map((l) => Math.exp(l - max));
    const order = p.map((_, i) => i).sort((x, y) => p[y] - p[x] || d.tokens[x] - d.tokens[y]);
    const total = p.reduce((s, x) => s + x, 0);
    const kept: number[] = [];
    let mass = 0;
    for (const i of order) {
      kept.push(i);
      mass += p[i];
      if (mass >= topP * total) break;
    }
    let r = rand() * mass;
    for (const i of kept) {
      r -= p[i];
      if (r < 0) return d.tokens[i];
    }
    return d.tokens[kept[kept.length - 1]];
  }
}

const STOPWORDS = new Set(
  'about above after again also because been before being could does doing from have having here just more most much only other over same should some such than that their them then there these they this those through very what when where which while will with would your yours into please thanks thank'.split(
    ' ',
  ),
);

/** Single-token words of the user's last turn (" word"), favoured while sampling. */
function topicTokens(text: string): Set<number> {
  const out = new Set<number>();
  const words = text.toLowerCase().match(/\p{L}{4,}/gu) ?? [];
  for (const w of words.slice(0, 50)) {
    if (STOPWORDS.has(w)) continue;
    const t = encode(` ${w}`);
    if (t.length === 1) out.add(t[0]);
  }
  return out;
}

const EMOJI = /\p{Extended_Pictographic}/u;

export interface DemoOptions {
  /** Pause between tokens (a slower, more realistic stream); 0 answers as fast as possible. */
  tokenDelayMs?: number;
}

export class DemoBackend implements ModelBackend {
  readonly kind = 'demo';
  private readonly models: Record<ModelConfig, NgramModel>;

  constructor(private readonly opts: DemoOptions = {}) {
    this.models = { service_3_pi: new NgramModel(PI_CORPUS), service_3_productivity: new NgramModel(PRODUCTIVITY_CORPUS) };
  }

  modelName(): string {
    return 'tollgate-demo';
  }

  async *generate(p: GenerateParams): AsyncGenerator<string, BackendFinish, undefined> {
    const model = this.models[p.config];
    const rand = mulberry32(p.seed);
    const boost = topicTokens(p.prompt.lastHuman);
    const userEmoji = p.config === 'service_3_pi' ? p.prompt.lastHuman.match(EMOJI)?.[0] : undefined;
    const decoder = new TextDecoder();
    const delay = this.opts.tokenDelayMs ?? 0;
    // The enforcer stops us at max_tokens by its own count; this is only a safety bound.
    const limit = p.maxTokens * 2 + 16;
    let a = BOS;
    let b = BOS;
    let reply = '';
    for (let i = 0; i < limit; i++) {
      if (p.signal.aborted) return 'stop';
      const tok = NgramModel.sample(model.distribution(a, b), p.temperature, p.topP, rand, boost);
      if (tok === EOS) {
        let tail = decoder.decode();
        if (userEmoji && !EMOJI.test(reply + tail)) tail += ` ${userEmoji}`;
        if (tail) yield tail;
        return 'stop';
      }
      const text = decoder.decode(tokenBytes(Uint32Array.of(tok)), { stream: true });
      a = b;
      b = tok;
      if (text) {
        reply += text;
        yield text;
      }
      if (delay > 0) await sleep(delay, undefined, { signal: p.signal }).catch(() => undefined);
      else if (i % 16 === 15) await tick();
    }
    return 'length';
  }
}

/** A small seeded PRNG (mulberry32) and a string hash (FNV-1a), for reproducible sampling. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
