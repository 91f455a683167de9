import { ErrorRequestHandler, Router } from 'express';
import { MODEL_CONFIGS } from '../models';
import type { Services } from '../../services';
import { HttpError, methodNotAllowed } from '../../platform/http/middleware/errors';
import type { Executed } from '../usecases/engine';
import { deferValidation, mount } from '../../platform/http/mount';
import { PATHS } from './paths';
import { endBrokenStream, RouteKit, streamFailure } from './route-kit';
import { chatCompletions, getModel, listModels, unsupportedChatFeature } from './schemas';
import { disconnectSignal, EventStreamWriter } from '../../platform/http/sse';
import { formatUsd } from '../../platform/money';
import { setUsageHeaders } from './usage-headers';

/** The OpenAI-compatible routes: chat completions (whole or streamed) and the model list. */

const MODELS_CREATED = 1_735_689_600; // 2025-01-01, when the two configs were published

export function mountOpenAiRoutes(r: Router, s: Services, kit: RouteKit): void {
  const { engine, now, generation, prepare, wholeAnswer, generateWhole, requestId, auth } = kit;

  // Validated inside `prepare`, after the key is admitted (./admit.ts): deferred.
  mount(
    r,
    chatCompletions,
    ...generation,
    deferValidation(async (req, res, read) => {
      let body!: ReturnType<typeof read>['body'];
      const prepared = await prepare(req, res, 'openai', () => {
        const unsupported = unsupportedChatFeature(req.body);
        if (unsupported) throw new HttpError(400, unsupported);
        body = read(req).body;
        return body.request;
      });
      const id = `chatcmpl-${prepared.facts.requestId}`;
      const created = Math.floor(now());
      const model = body.request.config;
      const usageOf = (out: Executed) => ({
        prompt_tokens: out.inputTokens,
        completion_tokens: out.outputTokens,
        total_tokens: out.inputTokens + out.outputTokens,
        // The TokensDebited amount of this request, exact (OpenRouter's name; SDKs keep unknown usage fields).
        cost: formatUsd(out.costNanoUsd),
      });
      if (!body.stream) {
        const { out, text } = await generateWhole(prepared, res);
        if (wholeAnswer(out) === 'gone') return;
        setUsageHeaders(res, out);
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
      const frames = chatChunkFrames(id, created, model, engine.backend.modelName(model));
      const openAiError = (message: string, type: string) => ({ error: { message, type, code: null }, detail: message });
      try {
        let first = true;
        const out = await engine.execute(prepared, {
          signal: disconnectSignal(res),
          streaming: true,
          onText: (text) => {
            const frame = frames.text(text, first);
            first = false;
            return writer.write(frame);
          },
        });
        const failure = streamFailure(out, writer.isStarted);
        if (failure === 'gone') return void res.end();
        if (failure) {
          await writer.send(openAiError(failure.detail, 'api_error')).catch(() => undefined);
          return writer.end();
        }
        const reason = out.result.finishReason;
        // As OpenAI: usage only when asked (stream_options.include_usage), only in a last chunk with no choices.
        await writer.write(frames.finish(reason, first));
        if (body.includeUsage) await writer.send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageOf(out) });
        await writer.send('[DONE]');
        writer.end();
      } catch (err) {
        await endBrokenStream(s, writer, err, prepared.facts.requestId, openAiError('The stream failed; please retry', 'api_error'));
      }
    }),
  );

  const modelList = () => MODEL_CONFIGS.map((id) => ({ id, object: 'model', created: MODELS_CREATED, owned_by: 'tollgate' }));
  // Not counted (listing models is not an inference request), but answered with the key's
  // rate-limit headers like every authenticated answer.
  const rateHeaders = kit.rateHeaders;
  mount(r, listModels, requestId, auth, rateHeaders, (_req, res) => {
    res.json({ object: 'list', data: modelList() });
  });
  mount(r, getModel, requestId, auth, rateHeaders, (_req, res, { params: { model } }) => {
    const m = modelList().find((x) => x.id === model);
    if (!m) throw new HttpError(404, `The model '${model.slice(0, 100)}' does not exist`);
    res.json(m);
  });

  r.all(chatCompletions.path, methodNotAllowed('POST'));
  r.all([listModels.path, getModel.path], methodNotAllowed('GET', 'HEAD'));
}

/**
 * openAiErrorShape for the OpenAI-compatible paths only. Mounted on the app (Module.errorMiddleware),
 * not in the router: an error raised before any router, such as a body that is not JSON, never
 * enters a router's stack.
 */
export const openAiErrors: ErrorRequestHandler = (err, req, res, next) =>
  req.path.startsWith(PATHS.openai) ? openAiErrorShape(err, req, res, next) : next(err);

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
      // A budget refusal carries which budget fired, what is left and when it resets: in OpenAI's
      // error object too, with its own code, so a client can tell it from an empty balance.
      const budget = (body as { budget?: unknown }).budget;
      const code = res.statusCode === 401 ? 'invalid_api_key' : budget ? 'budget_exceeded' : null;
      body = {
        ...(body as object),
        error: { message, type: OPENAI_TYPES[res.statusCode] ?? 'api_error', code, ...(budget ? { budget } : {}) },
      };
    }
    return json(body);
  };
  next(err);
};

/**
 * The `data:` frames of one streamed chat completion. Every chunk of a reply shares its id,
 * created, model and fingerprint: that head is encoded once per reply, and each chunk encodes only
 * its delta and finish_reason. The bytes are those of sseFrame(chunk object), key order included
 * (a unit test compares them).
 */
export function chatChunkFrames(id: string, created: number, model: string, fingerprint: string) {
  const head =
    `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${JSON.stringify(created)},` +
    `"model":${JSON.stringify(model)},"system_fingerprint":${JSON.stringify(fingerprint)},"choices":[{"index":0,"delta":`;
  const frame = (delta: string, finish: string | null) =>
    `${head}${delta},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
  return {
    /** A chunk of text; the first one also carries the assistant's role. */
    text: (text: string, first: boolean) => frame(`{${first ? '"role":"assistant",' : ''}"content":${JSON.stringify(text)}}`, null),
    /** The last chunk with choices: its finish_reason, and the role when no text came before. */
    finish: (reason: string, first: boolean) => frame(first ? '{"role":"assistant","content":""}' : '{}', reason),
  };
}
