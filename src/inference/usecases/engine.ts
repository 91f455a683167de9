import { budgetLeft, budgetMonth, budgetRefusal, type KeyRecord } from '../../accounts';
import type { Reservations } from '../../billing';
import type { Endpoint } from '../events';
import {
  completed,
  contextWindowProblem,
  CONTEXT_WINDOW_TOKENS,
  RequestFacts,
  requested,
} from '../metering';
import { DomainError } from '../../platform/errors';
import { formatUsd, NanoUsd } from '../../platform/money';
import { Prices, tokenCost } from '../pricing';
import { streams } from '../../platform/streams';
import { EventMetadata, NewEvent, WrongExpectedVersion } from '../../platform/eventstore/port';
import type { ModelBackend } from '../backend';
import { GenerationResult, runGeneration } from '../generate';
import { renderPrompt, RenderedPrompt } from '../prompt';
import type { InferenceRequest } from '../request';
import { needsFreshFacts, searchQuery } from '../search/policy';
import type { SearchProvider, SearchResult } from '../search/port';
import { countSegments } from '../tokenizer';
import type { Services } from '../../services';

/**
 * The metered hot path after auth, rate limit and validation:
 *   count → 400 if over the window → web search → reserve (402) → InferenceRequested (503)
 *   → generate under stop/max enforcement → InferenceCompleted + TokensDebited (one append, rev 0).
 * Nothing here waits for projections; the projector applies the debit and releases the hold.
 */

/** A prompt longer than this many UTF-16 units cannot fit in the window (no tokenizer needed). */
const MAX_PROMPT_CHARS = CONTEXT_WINDOW_TOKENS * 16;
const SEARCH_RESULTS = 5;

export interface EngineOptions {
  backend: ModelBackend;
  search?: SearchProvider;
  reservations: Reservations;
  prices: Prices;
  /** Longest a generation may run (past it: upstream_error). */
  timeoutMs: number;
  searchTimeoutMs: number;
  /**
   * Hashes `{seed source}\u0000{prompt}` into the backend's 32-bit sampling seed (GenerateParams.seed),
   * so one seed and prompt always sample the same reply. The composition root passes the demo
   * model's FNV-1a: the engine does not know which backend samples.
   */
  seedHash: (text: string) => number;
}

export interface Prepared {
  facts: RequestFacts;
  request: InferenceRequest;
  prompt: RenderedPrompt;
  reserved: NanoUsd;
  startedMs: number;
  metadata: EventMetadata;
  searched: boolean;
}

export interface Executed {
  result: GenerationResult;
  inputTokens: number;
  outputTokens: number;
  /** False when InferenceCompleted + TokensDebited could not be written (store down). */
  recorded: boolean;
}

export class InferenceEngine {
  /** Background retries of completions that could not be written at once (streams already sent). */
  private readonly pending = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly s: Services,
    private readonly opts: EngineOptions,
  ) {}

  get backend(): ModelBackend {
    return this.opts.backend;
  }

  async prepare(input: {
    requestId: string;
    key: KeyRecord;
    endpoint: Endpoint;
    request: InferenceRequest;
    clientRequestId?: string;
  }): Promise<Prepared> {
    const { request, key, requestId } = input;
    const now = this.s.now();
    let prompt = renderPrompt({ config: request.config, context: request.context, metadata: request.metadata, now });
    if (prompt.text.length > MAX_PROMPT_CHARS) {
      throw new DomainError(
        'bad_request',
        `This model's maximum context length is ${CONTEXT_WINDOW_TOKENS} tokens. However, the prompt is ` +
          `${prompt.text.length} characters long, more than ${CONTEXT_WINDOW_TOKENS} tokens can hold, with ` +
          `${request.maxTokens} tokens for the completion as max_tokens. Please shorten the context.`,
      );
    }
    let promptTokens = countSegments(prompt.segments);
    const problem = contextWindowProblem(promptTokens, request.maxTokens);
    if (problem) throw new DomainError('bad_request', problem);

    // Web search before reserving: its results are part of the billed prompt.
    let searched = false;
    if (request.webSearch && this.opts.search && needsFreshFacts(prompt.lastHuman)) {
      const query = searchQuery(prompt.lastHuman);
      let results: SearchResult[] = [];
      try {
        results = await this.opts.search.search(query, {
          limit: SEARCH_RESULTS,
          signal: AbortSignal.timeout(this.opts.searchTimeoutMs),
        });
      } catch (err) {
        this.s.log.warn({ err, requestId }, 'web search failed; answering without it');
      }
      // Keep as many results as fit in the window.
      while (results.length) {
        const withResults = renderPrompt({ ...request, now, search: { query, results } });
        const tokens = countSegments(withResults.segments);
        if (!contextWindowProblem(tokens, request.maxTokens)) {
          prompt = withResults;
          promptTokens = tokens;
          searched = true;
          break;
        }
        results = results.slice(0, -1);
      }
    }

    const facts: RequestFacts = {
      requestId,
      workspaceId: key.workspaceId,
      keyId: key.keyId,
      config: request.config,
      endpoint: input.endpoint,
      promptTokens,
      maxTokens: request.maxTokens,
      webSearch: searched,
    };
    // Held before generating: the most it can cost, the prompt plus max_tokens of output.
    const reserved = tokenCost(this.opts.prices, promptTokens, request.maxTokens);
    const held = await unavailableOnFailure(() =>
      this.opts.reservations.reserve(key.workspaceId, requestId, reserved, now.getTime(), {
        keyId: key.keyId,
        month: budgetMonth(now.toISOString()),
      }),
    );
    if (!held.ok && held.budget) {
      const b = held.budget;
      throw new DomainError('payment_required', budgetRefusal(key.name, b.budget, budgetLeft(b.budget, b.spent, b.heldByOthers), reserved));
    }
    if (!held.ok) {
      const available = held.available > 0n ? held.available : 0n;
      throw new DomainError('payment_required', `Insufficient balance: ${formatUsd(available)} USD available, ${formatUsd(reserved)} USD required`);
    }

    const metadata: EventMetadata = {
      actor: `apikey:${key.keyId}`,
      correlationId: input.clientRequestId ?? requestId,
      ...(input.clientRequestId ? { clientRequestId: input.clientRequestId } : {}),
    };
    try {
      const e = requested(facts, reserved);
      await this.s.store.append(streams.inference(requestId), [{ id: this.s.newId(), type: e.type, data: e.data, metadata }], {
        expectedRevision: 'no_stream',
      });
    } catch (err) {
      // Never serve unmetered: without InferenceRequested there is no generation.
      await this.opts.reservations.release(key.workspaceId, requestId).catch((e) =>
        this.s.log.error({ err: e, requestId }, 'could not release a reservation (the sweeper will)'),
      );
      throw err; // StoreUnavailable → 503 through the error mapper
    }
    return { facts, request, prompt, reserved, startedMs: now.getTime(), metadata, searched };
  }

  /**
   * Generates and records the outcome. `delivered`: the caller receives text as it is released
   * (streaming). A non-streaming caller whose upstream failed receives nothing and pays nothing.
   */
  async execute(
    p: Prepared,
    opts: { signal: AbortSignal; onText: (text: string) => void | Promise<void>; streaming: boolean },
  ): Promise<Executed> {
    const { request } = p;
    const seedSource = request.seed !== undefined ? `seed:${request.seed}` : `request:${p.facts.requestId}`;
    const result = await runGeneration(
      this.opts.backend,
      {
        config: request.config,
        prompt: p.prompt,
        temperature: request.temperature,
        topP: request.topP,
        maxTokens: request.maxTokens,
        stop: request.stop,
        seed: this.opts.seedHash(`${seedSource}\u0000${p.prompt.text}`),
        ...(request.seed !== undefined ? { requestSeed: request.seed } : {}),
      },
      { signal: opts.signal, timeoutMs: this.opts.timeoutMs, onText: opts.onText },
    );
    if (result.error) this.s.log.warn({ err: result.error, requestId: p.facts.requestId }, 'model upstream failed');
    const outputTokens = result.finishReason === 'upstream_error' && !opts.streaming ? 0 : result.outputTokens;
    const [done, debit] = completed(
      p.facts,
      this.opts.prices,
      { finishReason: result.finishReason, outputTokens, durationMs: this.s.now().getTime() - p.startedMs },
      p.reserved,
    );
    const events: NewEvent[] = [done, debit].map((e) => ({ id: this.s.newId(), type: e.type, data: e.data, metadata: p.metadata }));
    const recorded = await this.appendCompletion(p, events, opts.streaming && result.text.length > 0);
    this.s.metrics.inferenceFinished({ ...p.facts, ...debit.data, finishReason: result.finishReason, recorded });
    if (!recorded && !opts.streaming && result.finishReason !== 'client_disconnected') this.closeUnbilled(p);
    return { result, inputTokens: debit.data.inputTokens, outputTokens: debit.data.outputTokens, recorded };
  }

  /**
   * One append at exact revision 0 (after InferenceRequested), retried with the same event ids (an
   * idempotent no-op if an earlier try did land). A conflict means the sweeper closed the request
   * first: it is recorded either way. When the store stays down, a reply the caller already has is
   * retried in the background for a few minutes; otherwise the sweeper closes the request later.
   */
  private async appendCompletion(p: Prepared, events: NewEvent[], keepTrying: boolean): Promise<boolean> {
    const stream = streams.inference(p.facts.requestId);
    const attempt = async () => {
      try {
        await this.s.store.append(stream, events, { expectedRevision: 0n });
        return true;
      } catch (err) {
        if (err instanceof WrongExpectedVersion) {
          this.s.log.warn({ requestId: p.facts.requestId }, 'request was already closed (by the sweeper)');
          return true;
        }
        this.s.log.error({ err, requestId: p.facts.requestId }, 'could not record an inference completion');
        return false;
      }
    };
    for (const wait of [0, 50, 250]) {
      if (wait) await new Promise((r) => setTimeout(r, wait));
      if (await attempt()) return true;
    }
    if (keepTrying && !this.closed) {
      const job = (async () => {
        for (let i = 0; i < 20 && !this.closed; i++) {
          await new Promise((r) => setTimeout(r, 15_000).unref());
          if (this.closed || (await attempt())) return;
        }
      })();
      this.pending.add(job);
      void job.finally(() => this.pending.delete(job));
    }
    return false;
  }

  /**
   * A non-streaming caller who got 503 because the reply could not be recorded pays nothing: the
   * request is closed as `store_unavailable` (zero debit, the hold released) once the store takes
   * writes again, retried in the background. (If this process dies first, the sweeper closes it
   * as abandoned.)
   */
  private closeUnbilled(p: Prepared): void {
    const [done, debit] = completed(
      p.facts,
      this.opts.prices,
      { finishReason: 'store_unavailable', outputTokens: 0, durationMs: this.s.now().getTime() - p.startedMs },
      p.reserved,
    );
    const events = [done, debit].map((e) => ({ id: this.s.newId(), type: e.type, data: e.data, metadata: p.metadata }));
    void this.appendCompletion(p, events, true);
  }

  close(): void {
    this.closed = true;
  }
}

/** Redis (or any infrastructure) failure while reserving → unavailable (503), never a 500. */
async function unavailableOnFailure<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw new DomainError('unavailable', 'Service temporarily unavailable: balances cannot be read');
  }
}
