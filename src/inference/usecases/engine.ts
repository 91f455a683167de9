import { periodIdsAt } from '../../platform/budget-periods';
import type { Reservations } from '../../billing';
import { completed, contextWindowProblem, CONTEXT_WINDOW_TOKENS, RequestFacts, requested } from '../metering';
import { DomainError } from '../../platform/errors';
import { Prices, tokenCost } from '../metering';
import { streams } from '../../platform/streams';
import { EventMetadata, NewEvent } from '../../platform/eventstore/port';
import { CompletionRecorder, type Recordable } from './completion-recorder';
import { paymentRefusal, unavailableOnFailure } from './refusals';
import type { ModelBackend } from '../backend';
import { GenerationResult, runGeneration } from '../generate';
import { renderPrompt } from '../prompt';
import type { InferenceRequest } from '../request';
import { needsFreshFacts, searchQuery } from '../search/policy';
import type { SearchProvider, SearchResult } from '../search/port';
import { countSegments } from '../tokenizer';
import type { Services } from '../../services';

/**
 * The metered hot path: plan (render, count → 400 if over the window) → admission (one Redis
 * script: key, rate limit, reserve → 402; ../routes/admit.ts), or for a web search: search →
 * reserve → then InferenceRequested, whose append runs BESIDE the generation: the upstream call
 * starts at once, its text reaches the caller only after the commit, and a failed commit aborts it
 * (503, hold released, nothing billed) → InferenceCompleted + TokensDebited (one append, rev 0).
 * Nothing here waits for projections: once the completion is recorded the hold becomes the settled
 * cost (Reservations.markPending), and the projector clears it when it applies the debit.
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

import type { Executed, Plan, Prepared, PrepareInput, Rendered } from './request-plan';

export type { Executed, Plan, Prepared, PrepareInput, Rendered };

export class InferenceEngine {
  private readonly completions: CompletionRecorder;

  constructor(
    private readonly s: Services,
    private readonly opts: EngineOptions,
  ) {
    this.completions = new CompletionRecorder(s, opts.prices, opts.reservations);
  }

  get backend(): ModelBackend {
    return this.opts.backend;
  }

  /**
   * What a request will cost before anything is asked of Redis: the prompt rendered and counted
   * exactly, checked against the window. CPU only, so the admission script can hold the exact amount.
   */
  plan(request: InferenceRequest): Plan {
    return this.count(this.render(request));
  }

  /** The prompt rendered, refused if it is longer than the window could hold (no tokenizer needed). */
  render(request: InferenceRequest): Rendered {
    const now = this.s.now();
    const prompt = renderPrompt({ config: request.config, context: request.context, metadata: request.metadata, now });
    if (prompt.text.length > MAX_PROMPT_CHARS) {
      throw new DomainError(
        'bad_request',
        `This model's maximum context length is ${CONTEXT_WINDOW_TOKENS} tokens. However, the prompt is ` +
          `${prompt.text.length} characters long, more than ${CONTEXT_WINDOW_TOKENS} tokens can hold, with ` +
          `${request.maxTokens} tokens for the completion as max_tokens. Please shorten the context.`,
      );
    }
    return { request, now, prompt };
  }

  /** The rendered prompt counted exactly and checked against the window (400), with the amount to hold. */
  count({ request, now, prompt }: Rendered): Plan {
    const promptTokens = countSegments(prompt.segments);
    const problem = contextWindowProblem(promptTokens, request.maxTokens);
    if (problem) throw new DomainError('bad_request', problem);
    const search = Boolean(request.webSearch && this.opts.search && needsFreshFacts(prompt.lastHuman));
    // Held before generating: the most it can cost, the prompt plus max_tokens of output.
    return { request, now, prompt, promptTokens, reserved: tokenCost(this.opts.prices, promptTokens, request.maxTokens), search };
  }

  /**
   * The whole way from a request to a recorded InferenceRequested for a caller already let through:
   * plan, web search, reserve (402), record. The inference routes take this way only for a request
   * that searches (its results are part of the billed prompt, so the amount is known only after
   * the search); every other request is planned, admitted and held in one script, then `record`ed.
   */
  async prepare(input: PrepareInput, planned?: Plan): Promise<Prepared> {
    const { key, requestId } = input;
    let plan = planned ?? this.plan(input.request);
    if (plan.search) plan = await this.withSearch(plan, requestId);
    const held = await unavailableOnFailure(() =>
      this.opts.reservations.reserve(key.workspaceId, requestId, plan.reserved, plan.now.getTime(), {
        keyId: key.keyId,
        periods: periodIdsAt(plan.now),
      }),
    );
    const refused = paymentRefusal(key, plan.reserved, held, plan.now);
    if (refused) throw refused;
    const prepared = await this.record(input, plan);
    if (held.ok) prepared.tightest = held.tightest;
    return prepared;
  }

  /** The plan with web search results, as many as fit in the window (none if the search failed). */
  private async withSearch(plan: Plan, requestId: string): Promise<Plan> {
    const { request, now } = plan;
    const query = searchQuery(plan.prompt.lastHuman);
    let results: SearchResult[] = [];
    try {
      results = await this.opts.search!.search(query, {
        limit: SEARCH_RESULTS,
        signal: AbortSignal.timeout(this.opts.searchTimeoutMs),
      });
    } catch (err) {
      this.s.log.warn({ err, requestId }, 'web search failed; answering without it');
    }
    while (results.length) {
      const withResults = renderPrompt({ ...request, now, search: { query, results } });
      const tokens = countSegments(withResults.segments);
      if (!contextWindowProblem(tokens, request.maxTokens)) {
        return {
          ...plan,
          prompt: withResults,
          promptTokens: tokens,
          reserved: tokenCost(this.opts.prices, tokens, request.maxTokens),
          searched: true,
        };
      }
      results = results.slice(0, -1);
    }
    return plan;
  }

  /**
   * Starts recording InferenceRequested for a request whose amount is held (Prepared.committed).
   * Without it there is no generation: on failure the hold is released and `execute` rethrows the
   * error (StoreUnavailable → 503).
   */
  async record(input: Omit<PrepareInput, 'request'>, plan: Plan): Promise<Prepared> {
    const { key, requestId } = input;
    const facts: RequestFacts = {
      requestId,
      workspaceId: key.workspaceId,
      keyId: key.keyId,
      config: plan.request.config,
      endpoint: input.endpoint,
      promptTokens: plan.promptTokens,
      maxTokens: plan.request.maxTokens,
      webSearch: plan.searched === true,
    };
    const metadata: EventMetadata = {
      actor: `apikey:${key.keyId}`,
      correlationId: input.clientRequestId ?? requestId,
      ...(input.clientRequestId ? { clientRequestId: input.clientRequestId } : {}),
    };
    // The append runs beside the generation (execute): no text reaches the caller before it
    // lands, and if it fails the upstream call is aborted and the hold released.
    const e = requested(facts, plan.reserved);
    const committed = this.s.store
      .append(streams.inference(requestId), [{ id: this.s.newId(), type: e.type, data: e.data, metadata }], {
        expectedRevision: 'no_stream',
      })
      .then(
        () => undefined,
        async (err: unknown) => {
          // Never serve unmetered: without InferenceRequested there is no generation. The append may
          // still have landed with its answer lost: only a request the store does not have is
          // released here; one it has is closed unbilled (the projector releases its hold), and
          // when the store cannot say, the hold stays for the sweeper, which decides the same way.
          await this.settleUnconfirmed({ facts, reserved: plan.reserved, startedMs: plan.now.getTime(), metadata });
          throw err; // StoreUnavailable → 503 through the error mapper
        },
      );
    committed.catch(() => undefined); // awaited by execute; never an unhandled rejection
    const { request, prompt, reserved } = plan;
    return { facts, request, prompt, reserved, startedMs: plan.now.getTime(), metadata, searched: plan.searched === true, committed };
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
    // The upstream call starts now, while InferenceRequested commits; its text waits for the commit,
    // and a failed commit cuts the upstream off (cancelOn).
    let isCommitted = false;
    p.committed.then(
      () => void (isCommitted = true),
      () => undefined,
    );
    const result: GenerationResult = await runGeneration(
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
      {
        signal: opts.signal,
        timeoutMs: this.opts.timeoutMs,
        cancelOn: p.committed,
        // Text waits for the commit; once it landed, each chunk goes straight through (no await).
        onText: (text) => (isCommitted ? opts.onText(text) : p.committed.then(() => opts.onText(text))),
      },
    );
    // Not recorded: nothing was sent, nothing is billed, the hold is released; StoreUnavailable → 503.
    await p.committed;
    if (result.error) this.s.log.warn({ err: result.error, requestId: p.facts.requestId }, 'model upstream failed');
    // A non-streaming caller receives text only with the whole answer: one whose upstream failed, or
    // who left before the end, got none of the output and pays none of it (the prompt was sent upstream).
    const received = opts.streaming || (result.finishReason !== 'upstream_error' && result.finishReason !== 'client_disconnected');
    const outputTokens = received ? result.outputTokens : 0;
    const [done, debit] = completed(
      p.facts,
      this.opts.prices,
      { finishReason: result.finishReason, outputTokens, durationMs: this.s.now().getTime() - p.startedMs },
      p.reserved,
    );
    const events: NewEvent[] = [done, debit].map((e) => ({ id: this.s.newId(), type: e.type, data: e.data, metadata: p.metadata }));
    const recorded = await this.completions.append(p, events, opts.streaming && result.text.length > 0);
    this.s.metrics.inferenceFinished({ ...p.facts, ...debit.data, finishReason: result.finishReason, recorded });
    if (!recorded && !opts.streaming && result.finishReason !== 'client_disconnected') this.completions.closeUnbilled(p);
    return {
      result,
      inputTokens: debit.data.inputTokens,
      outputTokens: debit.data.outputTokens,
      costNanoUsd: BigInt(debit.data.amountNanoUsd),
      recorded,
    };
  }

  /** After a failed InferenceRequested append. */
  private async settleUnconfirmed(p: Recordable): Promise<void> {
    const { workspaceId, requestId } = p.facts;
    const landed = await this.s.store.readStream(streams.inference(requestId)).then(
      (events) => events.length > 0,
      () => null,
    );
    if (landed === true) return this.completions.closeUnbilled(p);
    if (landed === null) return;
    await this.opts.reservations
      .release(workspaceId, requestId)
      .catch((e) => this.s.log.error({ err: e, requestId }, 'could not release a reservation (the sweeper will)'));
  }

  close(): void {
    this.completions.close();
  }
}
