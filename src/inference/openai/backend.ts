import { Pool } from 'undici';
import type { ModelConfig } from '../events';
import { BackendFinish, GenerateParams, ModelBackend, UpstreamError } from '../backend';
import { SseEvent, SseParser } from './sse';

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

/** Deltas read ahead of the consumer before the upstream body is paused. */
const MAX_QUEUED = 16;

/** Where one config's requests go: a keep-alive connection pool per upstream origin, built once. */
interface Route {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  model: string;
}

/**
 * The upstream client is undici's Pool/request (keep-alive sockets, a Node stream body) rather than
 * fetch: no WHATWG streams, Headers or Response objects per call.
 */
export class OpenAiBackend implements ModelBackend {
  readonly kind = 'openai';
  private readonly routes = new Map<ModelConfig, Route>();
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly targets: Record<ModelConfig, UpstreamTarget>) {}

  private route(config: ModelConfig): Route {
    let r = this.routes.get(config);
    if (r) return r;
    const target = this.targets[config];
    const url = new URL(`${target.baseUrl.replace(/\/+$/, '')}/chat/completions`);
    let pool = this.pools.get(url.origin);
    if (!pool) {
      pool = new Pool(url.origin, { keepAliveTimeout: 30_000 });
      this.pools.set(url.origin, pool);
    }
    r = {
      pool,
      path: url.pathname + url.search,
      model: target.model,
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      },
    };
    this.routes.set(config, r);
    return r;
  }

  /** Closes the upstream connections. */
  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }

  modelName(config: ModelConfig): string {
    return this.targets[config].model;
  }

  async *generate(p: GenerateParams): AsyncGenerator<string, BackendFinish | void, undefined> {
    const route = this.route(p.config);
    // No controller of our own: the consumer (runGeneration) aborts p.signal whenever it stops
    // before our natural end, and stopping the body's iteration destroys the upstream call anyway.
    const signal = p.signal;
    if (signal.aborted) return;
    let res: Awaited<ReturnType<Pool['request']>>;
    try {
      res = await route.pool.request({
        path: route.path,
        method: 'POST',
        headers: route.headers,
        body: JSON.stringify({
          model: route.model,
          messages: p.prompt.messages,
          temperature: p.temperature,
          top_p: p.topP,
          max_tokens: p.maxTokens,
          ...(p.stop.length ? { stop: p.stop.slice(0, MAX_UPSTREAM_STOPS) } : {}),
          ...(p.requestSeed !== undefined ? { seed: p.requestSeed } : {}),
          stream: true,
        }),
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new UpstreamError(`model upstream unreachable: ${(err as Error).message}`, undefined, { cause: err });
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const text = await res.body.text().catch(() => '');
      throw new UpstreamError(`model upstream answered HTTP ${res.statusCode}${text ? `: ${text.slice(0, 200)}` : ''}`, res.statusCode);
    }
    // The body is read from its 'data' events into a queue of deltas, parsed as they arrive: no
    // async iterator over the body and no generator per SSE event, one step per delta at most.
    const body = res.body;
    const parser = new SseParser();
    const queue: string[] = [];
    let taken = 0;
    let finish: BackendFinish | undefined;
    let done = false;
    let ended = false;
    let failure: unknown;
    let wake: (() => void) | null = null;
    const onEvent = (ev: SseEvent) => {
      if (done) return;
      if (ev.data === '[DONE]') {
        done = true;
        return;
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
      if (typeof content === 'string' && content.length) queue.push(content);
      if (choice?.finish_reason) finish = choice.finish_reason === 'length' ? 'length' : 'stop';
    };
    const settle = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const fail = (err: unknown) => {
      if (failure === undefined) failure = err;
      settle();
    };
    const onData = (chunk: Uint8Array) => {
      if (failure !== undefined) return;
      try {
        const events = parser.push(chunk);
        for (let i = 0; i < events.length; i++) onEvent(events[i]);
      } catch (err) {
        fail(err);
        return;
      }
      // Backpressure: a consumer more than a few deltas behind (a slow caller) pauses the upstream.
      if (queue.length - taken > MAX_QUEUED) body.pause();
      settle();
    };
    const onEnd = () => {
      try {
        for (const ev of parser.end()) onEvent(ev);
      } catch (err) {
        return fail(err);
      }
      ended = true;
      settle();
    };
    // Closed without 'end' or 'error' (destroyed quietly): never wait on it.
    const onClose = () => {
      if (!ended) fail(new Error('the body closed before its end'));
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', fail);
    body.on('close', onClose);
    try {
      // Read to the end of the body even after [DONE]: stopping early would destroy the body and
      // with it the keep-alive connection.
      for (;;) {
        if (taken < queue.length) {
          const delta = queue[taken];
          queue[taken++] = '';
          if (taken === queue.length) {
            queue.length = 0;
            taken = 0;
            if (body.isPaused()) body.resume();
          }
          yield delta;
          continue;
        }
        if (failure !== undefined) throw failure;
        if (ended) break;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } catch (err) {
      if (signal.aborted || err instanceof UpstreamError) throw err;
      throw new UpstreamError(`model upstream stream broke: ${(err as Error).message}`, undefined, { cause: err });
    } finally {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('close', onClose);
      // A consumer that stopped early (or a failure) leaves the body unread: destroy it, which
      // releases the upstream call. 'error' stays listened to so a late one is not unhandled.
      if (!ended) body.destroy();
    }
    if (!done && !finish) throw new UpstreamError('model upstream closed the stream before it finished');
    return finish ?? 'stop';
  }
}
