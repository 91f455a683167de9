import type { ModelBackend } from './backend';
import { fnv1a } from './demo/model';
import type { SearchProvider } from './search/port';
import { warmTokenizer } from './tokenizer';
import { Reservations } from '../billing';
import { KeyIndex, touchKeyLastUsed } from '../accounts';
import type { Module, Services } from '../services';
import { startSweeper, SWEEPER_QUEUE } from './workers/sweeper';
import type { OnKeyUsed } from './routes/auth';
import { InferenceEngine } from './usecases/engine';
import { Admission } from './routes/admission';
import { inferenceRouter } from './routes/router';
import { openAiErrors } from './routes/openai-routes';
import { IdempotencyStore } from './idempotency/store';
import { idempotency } from './routes/idempotency';
import { closeSuperseded } from './usecases/supersede';

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
  /** Replaces the backend the composition root chose (tests, benchmarks). */
  backend?: ModelBackend;
  /** Replaces the search provider the composition root chose; null: no search at all. */
  search?: SearchProvider | null;
  /** How long an idempotent call's process may go silent before a retry takes its key over (default 30 s). */
  idempotencyLeaseMs?: number;
}

/** The inference slice: the three routes (api role) and the sweeper (worker role). */
export function createInferenceModule(opts: InferenceModuleOptions = {}): Module {
  return {
    name: 'inference',
    errorMiddleware: () => openAiErrors,
    router(s: Services) {
      warmTokenizer();
      const c = s.config;
      const search = opts.search === undefined ? s.search : (opts.search ?? undefined);
      const prices = { inputNanoUsdPerToken: c.PRICE_INPUT_NANO_USD_PER_TOKEN, outputNanoUsdPerToken: c.PRICE_OUTPUT_NANO_USD_PER_TOKEN };
      // The request path's clock: the generation caches age on it, as the idempotency leases do.
      const clock = () => s.now().getTime();
      const replies = new IdempotencyStore(
        s.redis,
        s.ks,
        c.IDEMPOTENCY_WINDOW_SECONDS * 1000,
        opts.idempotencyLeaseMs ?? 30_000,
        clock,
        s.newId,
      );
      const engine = new InferenceEngine(s, {
        backend: opts.backend ?? s.model(),
        ...(search ? { search } : {}),
        reservations: new Reservations(s.redis, s.ks, clock),
        prices,
        timeoutMs: c.INFERENCE_TIMEOUT_MS,
        searchTimeoutMs: c.SEARXNG_TIMEOUT_MS,
        seedHash: fnv1a,
      });
      // Its completion recorder retries in the background: stop that before the store closes.
      s.onClose(() => engine.close());
      const keys = new KeyIndex(s.redis, s.ks, clock);
      return inferenceRouter(s, {
        engine,
        keys,
        admission: new Admission(s.redis, s.ks, keys, s.ks.shared('rl', 'inference'), c.RATE_LIMIT_PER_MINUTE, clock),
        ratePerMinute: c.RATE_LIMIT_PER_MINUTE,
        rateCounterPrefix: s.ks.shared('rl', 'inference'),
        onKeyUsed: lastUsedToucher(s),
        idempotency: idempotency(replies, (previous) => closeSuperseded(s, prices, previous)),
      });
    },
    async startWorkers(s: Services) {
      if (!s.config.SWEEPER_ENABLED) return { close: async () => undefined };
      return startSweeper(s);
    },
    queues: [SWEEPER_QUEUE],
  };
}

export const inferenceModule: Module = createInferenceModule();
