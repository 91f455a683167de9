import type { EventRecord } from '../platform/event';
import type { NanoUsd } from '../platform/money';
import type { Endpoint, FinishReason, InferenceCompleted, InferenceRequested, ModelConfig, TokensDebited } from './events';

/**
 * The metering rules of one inference request, pure: what is reserved, what is recorded when the
 * request starts and ends, and what the sweeper does with a request whose process died.
 */

/** Both models have an 8k context window: prompt + max_tokens must fit in it. */
export const CONTEXT_WINDOW_TOKENS = 8192;

/** The 400 message when prompt + max_tokens do not fit, or null when they do. */
export function contextWindowProblem(promptTokens: number, maxTokens: number): string | null {
  if (promptTokens + maxTokens <= CONTEXT_WINDOW_TOKENS) return null;
  return (
    `This model's maximum context length is ${CONTEXT_WINDOW_TOKENS} tokens. However, you requested ` +
    `${promptTokens + maxTokens} tokens (${promptTokens} in the prompt, ${maxTokens} for the completion ` +
    `as max_tokens). Please shorten the context or lower max_tokens.`
  );
}

export interface RequestFacts {
  requestId: string;
  workspaceId: string;
  keyId: string;
  config: ModelConfig;
  endpoint: Endpoint;
  promptTokens: number;
  maxTokens: number;
  webSearch: boolean;
}

export function requested(facts: RequestFacts, reserved: NanoUsd): InferenceRequested {
  return {
    type: 'InferenceRequested',
    data: {
      requestId: facts.requestId,
      workspaceId: facts.workspaceId,
      keyId: facts.keyId,
      config: facts.config,
      endpoint: facts.endpoint,
      promptTokens: facts.promptTokens,
      maxTokens: facts.maxTokens,
      reservedNanoUsd: reserved.toString(),
      webSearch: facts.webSearch,
    },
  };
}

export interface Outcome {
  finishReason: FinishReason;
  /** Tokens of the reply as enforced (cl100k_base of the text the model produced). */
  outputTokens: number;
  durationMs: number;
}

/**
 * Tokens billed for an outcome:
 * - every finish bills the prompt and the reply's tokens (a caller who disconnects pays for what
 *   was generated up to then; a failed upstream after partial output, for that output);
 * - an upstream that failed before producing anything bills nothing: no reply, no charge;
 * - an empty completion (the model finished with no output) bills nothing either: the zero-charge
 *   rule of docs/USAGE-POLICY.md;
 * - `abandoned` (the sweeper closing a request whose process died) bills the prompt only: the
 *   prompt reached the model, the reply was lost with the process;
 * - `store_unavailable` bills nothing: a non-streaming caller whose reply could not be recorded
 *   got 503 and no text;
 * - `superseded` bills nothing: an idempotent call whose process died, replaced by its retry;
 * - never more output than max_tokens, never more money than was reserved (only a price change
 *   between reservation and debit could ask for more: then fewer tokens are billed).
 */
export function billedTokens(
  prices: Prices,
  facts: Pick<RequestFacts, 'promptTokens' | 'maxTokens'>,
  outcome: Pick<Outcome, 'finishReason' | 'outputTokens'>,
  reserved: NanoUsd,
): { inputTokens: number; outputTokens: number } {
  let output = Math.max(0, Math.min(outcome.outputTokens, facts.maxTokens));
  let input = facts.promptTokens;
  if ((outcome.finishReason === 'upstream_error' || outcome.finishReason === 'stop' || outcome.finishReason === 'length') && output === 0) {
    input = 0;
  }
  if (outcome.finishReason === 'abandoned') output = 0;
  if (outcome.finishReason === 'store_unavailable' || outcome.finishReason === 'superseded') input = output = 0;
  if (tokenCost(prices, input, output) > reserved) {
    const out = prices.outputNanoUsdPerToken;
    while (output > 0 && tokenCost(prices, input, output) > reserved) output -= 1;
    if (tokenCost(prices, input, output) > reserved && prices.inputNanoUsdPerToken > 0n) {
      input = Number((reserved - BigInt(output) * out) / prices.inputNanoUsdPerToken);
    }
  }
  return { inputTokens: input, outputTokens: output };
}

/** InferenceCompleted + TokensDebited, appended together at the request stream's revision 0. */
export function completed(facts: RequestFacts, prices: Prices, outcome: Outcome, reserved: NanoUsd): [InferenceCompleted, TokensDebited] {
  const billed = billedTokens(prices, facts, outcome, reserved);
  const base = {
    requestId: facts.requestId,
    workspaceId: facts.workspaceId,
    keyId: facts.keyId,
    config: facts.config,
    inputTokens: billed.inputTokens,
    outputTokens: billed.outputTokens,
  };
  return [
    {
      type: 'InferenceCompleted',
      data: { ...base, finishReason: outcome.finishReason, durationMs: Math.max(0, Math.round(outcome.durationMs)) },
    },
    {
      type: 'TokensDebited',
      data: {
        ...base,
        inputPriceNanoUsd: prices.inputNanoUsdPerToken.toString(),
        outputPriceNanoUsd: prices.outputNanoUsdPerToken.toString(),
        amountNanoUsd: tokenCost(prices, billed.inputTokens, billed.outputTokens).toString(),
      },
    },
  ];
}

/** What the sweeper does with an old open reservation, given the request's stream. */
export type SweepDecision =
  /** No InferenceRequested: the request never reached the event store. Drop the hold. */
  | { kind: 'release' }
  /** Requested but never completed: its process died. Close it (append at revision 0). */
  | { kind: 'close'; events: [InferenceCompleted, TokensDebited] }
  /** Already debited: the projector releases the hold when it applies the debit (at `position`). */
  | { kind: 'debited'; position: bigint };

/** `events`: the request's stream, as stored. */
export function decideSweep(events: EventRecord[], prices: Prices, now: Date): SweepDecision {
  const req = events.find((e) => e.type === 'InferenceRequested');
  if (!req) return { kind: 'release' };
  const debit = events.find((e) => e.type === 'TokensDebited');
  if (debit) return { kind: 'debited', position: debit.position };
  const d = req.data as InferenceRequested['data'];
  const durationMs = now.getTime() - Date.parse(req.created);
  return {
    kind: 'close',
    events: completed(factsOf(d), prices, { finishReason: 'abandoned', outputTokens: 0, durationMs }, BigInt(d.reservedNanoUsd)),
  };
}

/**
 * The retry that took over the `Idempotency-Key` of a request whose process died closes that
 * request: InferenceCompleted (superseded) + a zero TokensDebited, or nothing if it is closed.
 */
export function decideSupersede(events: EventRecord[], prices: Prices, now: Date): [InferenceCompleted, TokensDebited] | null {
  const req = events.find((e) => e.type === 'InferenceRequested');
  if (!req || events.some((e) => e.type === 'TokensDebited')) return null;
  const d = req.data as InferenceRequested['data'];
  const durationMs = now.getTime() - Date.parse(req.created);
  return completed(factsOf(d), prices, { finishReason: 'superseded', outputTokens: 0, durationMs }, BigInt(d.reservedNanoUsd));
}

function factsOf(d: InferenceRequested['data']): RequestFacts {
  return {
    requestId: d.requestId,
    workspaceId: d.workspaceId,
    keyId: d.keyId,
    config: d.config,
    endpoint: d.endpoint,
    promptTokens: d.promptTokens,
    maxTokens: d.maxTokens,
    webSearch: d.webSearch,
  };
}

export type { Endpoint, FinishReason, ModelConfig };

/** Per-token prices in nano-USD. They come from configuration and are written into every debit. */
export interface Prices {
  inputNanoUsdPerToken: NanoUsd;
  outputNanoUsdPerToken: NanoUsd;
}

/**
 * What `inputTokens` in and `outputTokens` out cost. A debit is the tokens billed; the reservation
 * held before generating is the most a request can cost: its prompt plus max_tokens of output.
 */
export function tokenCost(prices: Prices, inputTokens: number, outputTokens: number): NanoUsd {
  return BigInt(inputTokens) * prices.inputNanoUsdPerToken + BigInt(outputTokens) * prices.outputNanoUsdPerToken;
}
