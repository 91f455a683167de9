import { formatUsd } from '../../platform/money';
import { CONTEXT_WINDOW_TOKENS, contextWindowProblem } from '../metering';
import { Prices, tokenCost } from '../metering';
import { renderPrompt } from '../prompt';
import type { InferenceRequest } from '../request';
import { countWithin } from '../count-within';

/**
 * What a request would be billed for its prompt if sent now, and the most it could cost: the same
 * rendering (persona, system text, the user's local time) and the same count as the engine's
 * prepare, without web search (whose results, when it runs, are added to the billed prompt).
 * A prompt longer than the window could hold even at 16 characters per token is not tokenized
 * (the engine refuses those the same way), so a 2 MB body costs no tokenizer time; a shorter one is
 * counted only until its count passes the window (../count-within.ts).
 */
const MAX_PROMPT_CHARS = CONTEXT_WINDOW_TOKENS * 16;

export interface TokenCount {
  config: InferenceRequest['config'];
  prompt_tokens: number | null;
  max_tokens: number;
  context_window: typeof CONTEXT_WINDOW_TOKENS;
  fits: boolean;
  max_cost: string | null;
  web_search: boolean;
}

export function countRequest(request: InferenceRequest, prices: Prices, now: Date): TokenCount {
  const prompt = renderPrompt({ config: request.config, context: request.context, metadata: request.metadata, now });
  const base = {
    config: request.config,
    max_tokens: request.maxTokens,
    context_window: CONTEXT_WINDOW_TOKENS,
    web_search: request.webSearch,
  } as const;
  if (prompt.text.length > MAX_PROMPT_CHARS) return { ...base, prompt_tokens: null, fits: false, max_cost: null };
  // Counted only while it can still fit: a long prompt costs what the largest admissible one does.
  const promptTokens = countWithin(prompt.segments, CONTEXT_WINDOW_TOKENS);
  if (promptTokens === null) return { ...base, prompt_tokens: null, fits: false, max_cost: null };
  return {
    ...base,
    prompt_tokens: promptTokens,
    fits: contextWindowProblem(promptTokens, request.maxTokens) === null,
    max_cost: formatUsd(tokenCost(prices, promptTokens, request.maxTokens)),
  };
}
