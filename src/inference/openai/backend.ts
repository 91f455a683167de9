import type { ModelConfig } from '../../domain/inference/events';
import { BackendFinish, GenerateParams, ModelBackend, UpstreamError } from '../backend';
import { readSse } from './sse';

/**
 * Any OpenAI-compatible chat-completions upstream (vLLM, llama.cpp server, Ollama, OpenAI, …):
 * per config a base URL, a model name and a key. It always streams, passes temperature, top_p,
 * max_tokens and stop (stop and max_tokens are enforced again by our own layer), and aborts the
 * upstream HTTP call when the caller disconnects (the request's AbortSignal).
 */
export interface UpstreamTarget {
  baseUrl: string;
  model: string;
  apiKey?: string;
}

/** OpenAI itself refuses more than 4 stop sequences; the rest are enforced by our layer alone. */
const MAX_UPSTREAM_STOPS = 4;

export class OpenAiBackend implements ModelBackend {
  readonly kind = 'openai';

  constructor(
    private readonly targets: Record<ModelConfig, UpstreamTarget>,
    private readonly opts: { fetch?: typeof fetch } = {},
  ) {}

  modelName(config: ModelConfig): string {
    return this.targets[config].model;
  }

  async *generate(p: GenerateParams): AsyncGenerator<string, BackendFinish | void, undefined> {
    const target = this.targets[p.config];
    const url = `${target.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    // Our own controller: aborted by the caller's signal, and by us when the consumer stops early.
    const ac = new AbortController();
    const onAbort = () => ac.abort(p.signal.reason);
    if (p.signal.aborted) return;
    p.signal.addEventListener('abort', onAbort, { once: true });
    try {
      let res: Response;
      try {
        res = await (this.opts.fetch ?? fetch)(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'text/event-stream',
            ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
          },
          body: JSON.stringify({
            model: target.model,
            messages: p.prompt.messages,
            temperature: p.temperature,
            top_p: p.topP,
            max_tokens: p.maxTokens,
            ...(p.stop.length ? { stop: p.stop.slice(0, MAX_UPSTREAM_STOPS) } : {}),
            ...(p.requestSeed !== undefined ? { seed: p.requestSeed } : {}),
            stream: true,
          }),
          signal: ac.signal,
        });
      } catch (err) {
        if (ac.signal.aborted) throw err;
        throw new UpstreamError(`model upstream unreachable: ${(err as Error).message}`, undefined, { cause: err });
      }
      if (!res.ok || !res.body) {
        const text = await res.text().catch(() => '');
        throw new UpstreamError(`model upstream answered HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`, res.status);
      }
      let finish: BackendFinish | undefined;
      let done = false;
      try {
        for await (const ev of readSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
          if (ev.data === '[DONE]') {
            done = true;
            break;
          }
          let json: {
            choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
            error?: { message?: string };
          };
          try {
            json = JSON.parse(ev.data);
          } catch {
            throw new UpstreamError('model upstream sent a malformed stream event');
          }
          if (json.error || ev.event === 'error') {
            throw new UpstreamError(`model upstream failed: ${json.error?.message ?? 'error event'}`);
          }
          const choice = json.choices?.[0];
          const content = choice?.delta?.content;
          if (typeof content === 'string' && content.length) yield content;
          if (choice?.finish_reason) finish = choice.finish_reason === 'length' ? 'length' : 'stop';
        }
      } catch (err) {
        if (ac.signal.aborted || err instanceof UpstreamError) throw err;
        throw new UpstreamError(`model upstream stream broke: ${(err as Error).message}`, undefined, { cause: err });
      }
      if (!done && !finish) throw new UpstreamError('model upstream closed the stream before it finished');
      return finish ?? 'stop';
    } finally {
      p.signal.removeEventListener('abort', onAbort);
      // Ends the upstream call if we stopped reading early (stop string, max_tokens, disconnect).
      ac.abort();
    }
  }
}
