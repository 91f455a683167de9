import type { Event } from '../platform/event';
import type { ModelConfig } from './models';

export type { ModelConfig } from './models';
export type Endpoint = 'inference' | 'streaming' | 'openai';
/**
 * `store_unavailable` (added after the first release; older events never carry it): a non-streaming
 * reply whose completion could not be written, so the caller got 503 instead of the text. Nothing
 * is billed; it is recorded late, once the store takes writes again.
 *
 * `superseded` (added with idempotent retries): a request sent with an `Idempotency-Key` whose
 * process died before answering, closed by the retry that took its key over. The caller never got
 * its reply and the retry is billed instead, so it bills nothing.
 */
export type FinishReason = 'stop' | 'length' | 'client_disconnected' | 'upstream_error' | 'abandoned' | 'store_unavailable' | 'superseded';

/**
 * Events of the `inference-{requestId}` stream. `TokensDebited` is the money event: it carries the
 * prices used, so a replay years later computes the same amount.
 */
export type InferenceRequested = Event<
  'InferenceRequested',
  {
    requestId: string;
    workspaceId: string;
    keyId: string;
    config: ModelConfig;
    endpoint: Endpoint;
    promptTokens: number;
    maxTokens: number;
    reservedNanoUsd: string;
    webSearch: boolean;
  }
>;
export type InferenceCompleted = Event<
  'InferenceCompleted',
  {
    requestId: string;
    workspaceId: string;
    keyId: string;
    config: ModelConfig;
    finishReason: FinishReason;
    inputTokens: number;
    outputTokens: number;
    durationMs: number;
  }
>;
export type TokensDebited = Event<
  'TokensDebited',
  {
    requestId: string;
    workspaceId: string;
    keyId: string;
    config: ModelConfig;
    inputTokens: number;
    outputTokens: number;
    inputPriceNanoUsd: string;
    outputPriceNanoUsd: string;
    amountNanoUsd: string;
  }
>;
