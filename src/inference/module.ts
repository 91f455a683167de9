import type { Config } from '../platform/config';
import type { ModelConfig } from './events';
import type { ModelBackend } from './backend';
import { DemoBackend } from './demo/model';
import { fnv1a } from './demo/prng';
import { OpenAiBackend, UpstreamTarget } from './openai/backend';
import type { SearchProvider } from './search/port';
import { SearxngSearch } from './search/searxng';
import { warmTokenizer } from './tokenizer';
import { Reservations } from '../billing/projections/balances/reservations';
import { KeyIndex } from '../accounts/projections/key-index/queries';
import type { Module, Services } from '../services';
import { startSweeper } from './workers/sweeper';
import { touchKeyLastUsed } from '../accounts/key-last-used';
import type { OnKeyUsed } from './routes/auth';
import { InferenceEngine } from './usecases/engine';
import { Admission } from './routes/admission';
import { inferenceRouter } from './routes/router';

/** The model backend the configuration asks for: the demo model (default) or an OpenAI-compatible upstream. */
export function backendFromConfig(c: Config): ModelBackend {
  if (c.MODEL_BACKEND === 'demo') return new DemoBackend({ tokenDelayMs: c.DEMO_TOKEN_DELAY_MS });
  const target = (config: ModelConfig, url?: string, model?: string, key?: string): UpstreamTarget => ({
    baseUrl: url ?? c.OPENAI_BASE_URL ?? '',
    model: model ?? config,
    ...((key ?? c.OPENAI_API_KEY) ? { apiKey: key ?? c.OPENAI_API_KEY } : {}),
  });
  return new OpenAiBackend({
    service_3_pi: target('service_3_pi', c.OPENAI_BASE_URL_PI, c.OPENAI_MODEL_PI, c.OPENAI_API_KEY_PI),
    service_3_productivity: target(
      'service_3_productivity',
      c.OPENAI_BASE_URL_PRODUCTIVITY,
      c.OPENAI_MODEL_PRODUCTIVITY,
      c.OPENAI_API_KEY_PRODUCTIVITY,
    ),
  });
}

export function searchFromConfig(c: Config): SearchProvider | undefined {
  return c.SEARXNG_URL ? new SearxngSearch(c.SEARXNG_URL, { timeoutMs: c.SEARXNG_TIMEOUT_MS }) : undefined;
}

/**
 * Records a key's "last used" at most once a second per key and process: a second is plenty for
 * the key list, and a busy key does not cost a Redis write per request.
 */
function lastUsedToucher(s: Services): OnKeyUsed {
  const touched = new Map<string, number>();
  return async (key, at) => {
    const ms = at.getTime();
    if (ms - (touched.get(key.keyId) ?? -Infinity) < 1000) return;
    if (touched.size > 10_000) touched.clear();
    touched.set(key.keyId, ms);
    await touchKeyLastUsed(s.redis, s.ks, key.keyId, at.toISOString());
  };
}

export interface InferenceModuleOptions {
  /** Replaces the configured backend (tests, benchmarks). */
  backend?: ModelBackend;
  /** Replaces the configured search provider; null: no search at all. */
  search?: SearchProvider | null;
}

/** The inference slice: the three routes (api role) and the sweeper (worker role). */
export function createInferenceModule(opts: InferenceModuleOptions = {}): Module {
  return {
    name: 'inference',
    router(s: Services) {
      warmTokenizer();
      const c = s.config;
      const search = opts.search === undefined ? searchFromConfig(c) : (opts.search ?? undefined);
      const engine = new InferenceEngine(s, {
        backend: opts.backend ?? backendFromConfig(c),
        ...(search ? { search } : {}),
        reservations: new Reservations(s.redis, s.ks),
        prices: { inputNanoUsdPerToken: c.PRICE_INPUT_NANO_USD_PER_TOKEN, outputNanoUsdPerToken: c.PRICE_OUTPUT_NANO_USD_PER_TOKEN },
        timeoutMs: c.INFERENCE_TIMEOUT_MS,
        searchTimeoutMs: c.SEARXNG_TIMEOUT_MS,
        seedHash: fnv1a,
      });
      const keys = new KeyIndex(s.redis, s.ks);
      return inferenceRouter(s, {
        engine,
        keys,
        admission: new Admission(s.redis, s.ks, keys, s.ks.shared('rl', 'inference'), c.RATE_LIMIT_PER_MINUTE),
        ratePerMinute: c.RATE_LIMIT_PER_MINUTE,
        onKeyUsed: lastUsedToucher(s),
      });
    },
    async startWorkers(s: Services) {
      if (!s.config.SWEEPER_ENABLED) return { close: async () => undefined };
      return startSweeper(s);
    },
  };
}

export const inferenceModule: Module = createInferenceModule();
