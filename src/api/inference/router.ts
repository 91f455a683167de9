import { ErrorRequestHandler, Request, RequestHandler, Response, Router } from 'express';
import { ZodType } from 'zod';
import type { Endpoint } from '../../domain/inference/events';
import { StoreUnavailable } from '../../eventstore/port';
import { UpstreamError } from '../../inference/backend';
import { MODEL_CONFIGS } from '../../inference/request';
import type { KeyIndex } from '../../projections/key-index/queries';
import type { Services } from '../../services';
import { HttpError } from '../middleware/errors';
import { apiKeyOf, authenticate, OnKeyUsed } from './auth';
import type { Executed, InferenceEngine } from './engine';
import type { InferenceRateLimiter } from './rate-limit';
import { chatCompletionSchema, inferenceBodySchema, unsupportedChatFeature } from './schema';
import { disconnectSignal, EventStreamWriter } from './stream-writer';

/**
 * The inference routes:
 *   POST /external/api/inference                                  {"created", "text"}
 *   POST /external/api/inference/streaming                        text/event-stream of
 *        data: {"created","idx","index","text"}; a failure after the stream started ends it with
 *        event: error / data: {"detail": "…"}
 *   POST /external/api/inference/openai/v1/chat/completions       OpenAI chat completions
 *   GET  /external/api/inference/openai/v1/models                 the two configs
 * Every response carries x-request-id: the inference request id (the `requestId` of its events).
 */

export const PATHS = {
  inference: '/external/api/inference',
  streaming: '/external/api/inference/streaming',
  openai: '/external/api/inference/openai',
  chat: '/external/api/inference/openai/v1/chat/completions',
  models: '/external/api/inference/openai/v1/models',
} as const;

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MODELS_CREATED = 1_735_689_600; // 2025-01-01, when the two configs were published

export interface RouterDeps {
  engine: InferenceEngine;
  keys: KeyIndex;
  limiter: InferenceRateLimiter;
  onKeyUsed?: OnKeyUsed;
}

function parse<T>(schema: ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (!r.success) throw r.error; // 422, FastAPI's list (errors middleware)
  return r.data;
}

function upstreamDetail(err: unknown): string {
  const status = err instanceof UpstreamError && err.status ? ` (HTTP ${err.status})` : '';
  const timedOut = err instanceof UpstreamError && /longer than/.test(err.message) ? ' (timed out)' : '';
  return `The model upstream failed${status}${timedOut}; please retry`;
}

const UNRECORDED = 'The reply could not be recorded: the event store cannot be written';

export function inferenceRouter(s: Services, deps: RouterDeps): Router {
  const r = Router();
  const { engine } = deps;
  const now = () => s.now().getTime() / 1000;

  // The request id is the inference stream's id: ours, never the caller's (which is kept in the
  // events' metadata as clientRequestId).
  const requestId: RequestHandler = (req, res, next) => {
    const id = s.newId();
    res.locals.inferenceId = id;
    res.setHeader('x-request-id', id);
    next();
  };
  const auth = authenticate(deps.keys, s.now, deps.onKeyUsed);
  const limit = deps.limiter.middleware();
  const chain = [requestId, auth, limit];

  const prepare = (req: Request, res: Response, endpoint: Endpoint, request: Parameters<InferenceEngine['prepare']>[0]['request']) => {
    const given = req.header('x-request-id');
    return engine.prepare({
      requestId: res.locals.inferenceId as string,
      key: apiKeyOf(res),
      endpoint,
      request,
      ...(given && SAFE_ID.test(given) ? { clientRequestId: given } : {}),
    });
  };

  /** The non-streaming outcome: the text, or the error that replaces it. */
  const settle = (out: Executed): 'gone' | 'ok' => {
    if (out.result.finishReason === 'client_disconnected') return 'gone';
    if (out.result.finishReason === 'upstream_error') throw new HttpError(502, upstreamDetail(out.result.error));
    if (!out.recorded) throw new StoreUnavailable(UNRECORDED);
    return 'ok';
  };

  /** A whole reply, for the non-streaming answers; a caller who leaves cancels it. */
  async function generateWhole(prepared: Awaited<ReturnType<typeof prepare>>, res: Response) {
    let text = '';
    const out = await engine.execute(prepared, {
      signal: disconnectSignal(res),
      streaming: false,
      onText: (t) => {
        text += t;
      },
    });
    return { out, text };
  }

  r.post(PATHS.inference, ...chain, async (req, res) => {
    const request = parse(inferenceBodySchema, req.body);
    const prepared = await prepare(req, res, 'inference', request);
    const { out, text } = await generateWhole(prepared, res);
    if (settle(out) === 'gone') return;
    res.json({ created: now(), text });
  });

  r.post(PATHS.streaming, ...chain, async (req, res) => {
    const request = parse(inferenceBodySchema, req.body);
    const prepared = await prepare(req, res, 'streaming', request);
    const writer = new EventStreamWriter(res);
    let idx = 0;
    try {
      const out = await engine.execute(prepared, {
        signal: disconnectSignal(res),
        streaming: true,
        onText: async (text) => {
          const i = idx++;
          await writer.send({ created: now(), idx: i, index: i, text });
        },
      });
      const reason = out.result.finishReason;
      if (reason === 'client_disconnected') return void res.end();
      let failure: string | null = null;
      if (reason === 'upstream_error') failure = upstreamDetail(out.result.error);
      else if (!out.recorded) failure = UNRECORDED;
      if (failure && !writer.isStarted) {
        throw reason === 'upstream_error' ? new HttpError(502, failure) : new StoreUnavailable(failure);
      }
      if (failure) await writer.send({ detail: failure }, 'error').catch(() => undefined);
      writer.end();
    } catch (err) {
      if (!writer.isStarted) throw err;
      s.log.error({ err, requestId: prepared.facts.requestId }, 'stream failed after it started');
      await writer.send({ detail: 'The stream failed; please retry' }, 'error').catch(() => undefined);
      writer.end();
    }
  });

  r.post(PATHS.chat, ...chain, async (req, res) => {
    const unsupported = unsupportedChatFeature(req.body);
    if (unsupported) throw new HttpError(400, unsupported);
    const body = parse(chatCompletionSchema, req.body);
    const prepared = await prepare(req, res, 'openai', body.request);
    const id = `chatcmpl-${prepared.facts.requestId}`;
    const created = Math.floor(now());
    const model = body.request.config;
    const usageOf = (out: Executed) => ({
      prompt_tokens: out.inputTokens,
      completion_tokens: out.outputTokens,
      total_tokens: out.inputTokens + out.outputTokens,
    });
    if (!body.stream) {
      const { out, text } = await generateWhole(prepared, res);
      if (settle(out) === 'gone') return;
      res.json({
        id,
        object: 'chat.completion',
        created,
        model,
        system_fingerprint: engine.backend.modelName(model),
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text, refusal: null },
            logprobs: null,
            finish_reason: out.result.finishReason,
          },
        ],
        usage: usageOf(out),
      });
      return;
    }
    const writer = new EventStreamWriter(res);
    const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: engine.backend.modelName(model),
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...extra,
    });
    const openAiError = (message: string, type: string) => ({ error: { message, type, code: null }, detail: message });
    try {
      let first = true;
      const out = await engine.execute(prepared, {
        signal: disconnectSignal(res),
        streaming: true,
        onText: async (text) => {
          await writer.send(chunk(first ? { role: 'assistant', content: text } : { content: text }, null));
          first = false;
        },
      });
      const reason = out.result.finishReason;
      if (reason === 'client_disconnected') return void res.end();
      let failure: string | null = null;
      if (reason === 'upstream_error') failure = upstreamDetail(out.result.error);
      else if (!out.recorded) failure = UNRECORDED;
      if (failure && !writer.isStarted) {
        throw reason === 'upstream_error' ? new HttpError(502, failure) : new StoreUnavailable(failure);
      }
      if (failure) {
        await writer.send(openAiError(failure, 'api_error')).catch(() => undefined);
        return writer.end();
      }
      const usage = usageOf(out);
      // As OpenAI: usage only when asked (stream_options.include_usage), only in a last chunk with no choices.
      await writer.send(chunk(first ? { role: 'assistant', content: '' } : {}, reason));
      if (body.includeUsage) await writer.send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageOf(out) });
      await writer.send('[DONE]');
      writer.end();
    } catch (err) {
      if (!writer.isStarted) throw err;
      s.log.error({ err, requestId: prepared.facts.requestId }, 'stream failed after it started');
      await writer.send(openAiError('The stream failed; please retry', 'api_error')).catch(() => undefined);
      writer.end();
    }
  });

  const modelList = () =>
    MODEL_CONFIGS.map((id) => ({ id, object: 'model', created: MODELS_CREATED, owned_by: 'tollgate' }));
  r.get(PATHS.models, requestId, auth, (_req, res) => {
    res.json({ object: 'list', data: modelList() });
  });
  r.get(`${PATHS.models}/:model`, requestId, auth, (req, res) => {
    const m = modelList().find((x) => x.id === req.params.model);
    if (!m) throw new HttpError(404, `The model '${String(req.params.model).slice(0, 100)}' does not exist`);
    res.json(m);
  });

  r.use(PATHS.openai, openAiErrorShape);
  return r;
}

const OPENAI_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'insufficient_quota',
  403: 'permission_error',
  404: 'not_found_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
};

/**
 * Under the OpenAI-compatible paths, error bodies keep {"detail": …} (as everywhere) and also
 * carry OpenAI's {"error": {"message", "type", "code"}}, so OpenAI SDKs show a readable message.
 * The status and detail still come from the one error mapper: this only decorates its JSON.
 */
const openAiErrorShape: ErrorRequestHandler = (err, _req, res, next) => {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    if (res.statusCode >= 400 && body && typeof body === 'object' && 'detail' in body) {
      const detail = (body as { detail: unknown }).detail;
      const message =
        typeof detail === 'string'
          ? detail
          : Array.isArray(detail) && detail.length
            ? `Invalid request: ${(detail as Array<{ loc: unknown[]; msg: string }>)
                .slice(0, 3)
                .map((d) => `${d.loc.join('.')}: ${d.msg}`)
                .join('; ')}`
            : 'Invalid request';
      body = {
        ...(body as object),
        error: { message, type: OPENAI_TYPES[res.statusCode] ?? 'api_error', code: res.statusCode === 401 ? 'invalid_api_key' : null },
      };
    }
    return json(body);
  };
  next(err);
};
