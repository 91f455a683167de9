import type { ModelConfig } from './events';
import type { RenderedPrompt } from './prompt';

/**
 * The ModelBackend port: something that continues a rendered prompt as a stream of text deltas.
 * Adapters: ./demo (the built-in sampling model, the default) and ./openai (any OpenAI-compatible
 * chat-completions upstream). Backends may ignore max_tokens and stop: the caller's layer
 * (./enforce) enforces both by its own count, whatever the backend does.
 */
export interface GenerateParams {
  config: ModelConfig;
  prompt: RenderedPrompt;
  temperature: number;
  topP: number;
  maxTokens: number;
  stop: string[];
  /** 32-bit unsigned sampling seed (derived from the caller's seed or the request id, and the prompt). */
  seed: number;
  /** The caller's own `seed`, when given (passed on to upstreams that support it). */
  requestSeed?: number;
  /** Aborted when the caller disconnects or the request times out: stop and release the upstream. */
  signal: AbortSignal;
}

/** How the backend itself ended: its natural end ('stop') or its own token limit ('length'). */
export type BackendFinish = 'stop' | 'length';

export interface ModelBackend {
  readonly kind: string;
  /** The model name a config is served by (shown in OpenAI-compatible responses and logs). */
  modelName(config: ModelConfig): string;
  generate(params: GenerateParams): AsyncGenerator<string, BackendFinish | void, undefined>;
  close?(): Promise<void>;
}

/** The model upstream failed (HTTP error, broken stream, timeout). */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
