import type { Router } from 'express';
import type { Services } from '../../services';
import { HttpError, methodNotAllowed } from '../../platform/http/middleware/errors';
import { deferValidation, mount } from '../../platform/http/mount';
import { disconnectSignal, EventStreamWriter, sseFrame } from '../../platform/http/sse';
import { formatUsd } from '../../platform/money';
import type { Executed } from '../usecases/engine';
import type { ModelConfig } from '../events';
import { endBrokenStream, RouteKit, streamFailure } from './route-kit';
import { responses, unsupportedResponsesFeature } from './responses-schemas';
import { setUsageHeaders } from './usage-headers';

/**
 * POST …/openai/v1/responses: the Responses API over the same admission, engine, idempotency and
 * metering as chat completions (the route kit's `generation` chain and `prepare`); only the shapes
 * of the request and the answer differ. The request's events say `endpoint: openai`, like chat.
 */
export function mountResponsesRoute(r: Router, s: Services, kit: RouteKit): void {
  const { engine, now, generation, prepare, wholeAnswer, generateWhole } = kit;

  mount(
    r,
    responses,
    ...generation,
    deferValidation(async (req, res, read) => {
      let body!: ReturnType<typeof read>['body'];
      const prepared = await prepare(req, res, 'openai', () => {
        const unsupported = unsupportedResponsesFeature(req.body);
        if (unsupported) throw new HttpError(400, unsupported);
        body = read(req).body;
        return body.request;
      });
      const requestId = prepared.facts.requestId;
      const shape = responseShape(requestId, Math.floor(now()), body.request.config, body.echo);
      if (!body.stream) {
        const { out, text } = await generateWhole(prepared, res);
        if (wholeAnswer(out) === 'gone') return;
        setUsageHeaders(res, out);
        res.json(shape.final(out, text));
        return;
      }
      const writer = new EventStreamWriter(res);
      let n = 0;
      const event = (data: { type: string } & Record<string, unknown>) => sseFrame({ ...data, sequence_number: n++ }, data.type);
      const item = { item_id: shape.itemId, output_index: 0, content_index: 0 };
      try {
        let text = '';
        const out = await engine.execute(prepared, {
          signal: disconnectSignal(res),
          streaming: true,
          onText: (t) => {
            // The opening events go out with the first text: a failure before any text is a plain error answer.
            let frames = '';
            if (!writer.isStarted) frames = opening();
            text += t;
            return writer.write(frames + event({ type: 'response.output_text.delta', ...item, delta: t, logprobs: [] }));
          },
        });
        const failure = streamFailure(out, writer.isStarted);
        if (failure === 'gone') return void res.end();
        if (failure) {
          const message = failure.detail;
          const error = { message, type: 'api_error', code: null };
          await writer.write(event({ type: 'error', code: 'server_error', message, param: null, error, detail: message }));
          return writer.end();
        }
        let frames = writer.isStarted ? '' : opening();
        const done = shape.final(out, text);
        const textPart = done.output[0]!.content[0]!;
        frames += event({ type: 'response.output_text.done', ...item, text, logprobs: [] });
        frames += event({ type: 'response.content_part.done', ...item, part: textPart });
        frames += event({ type: 'response.output_item.done', output_index: 0, item: done.output[0] });
        frames += event({ type: done.status === 'completed' ? 'response.completed' : 'response.incomplete', response: done });
        await writer.write(frames);
        writer.end();
      } catch (err) {
        const message = 'The stream failed; please retry';
        const error = { message, type: 'api_error', code: null };
        await endBrokenStream(
          s,
          writer,
          err,
          requestId,
          { type: 'error', code: 'server_error', message, param: null, error, detail: message, sequence_number: n },
          'error',
        );
      }

      function opening(): string {
        const started = shape.started();
        return (
          event({ type: 'response.created', response: started }) +
          event({ type: 'response.in_progress', response: started }) +
          event({ type: 'response.output_item.added', output_index: 0, item: shape.message('in_progress', []) }) +
          event({ type: 'response.content_part.added', ...item, part: shape.part('') })
        );
      }
    }),
  );

  r.all(responses.path, methodNotAllowed('POST'));
}

interface Echo {
  instructions: string | null;
  max_output_tokens: number | null;
  temperature: number;
  top_p: number;
}

/** The Response object at each stage of one reply (ids derive from the request id: a replay answers the same). */
function responseShape(requestId: string, createdAt: number, model: ModelConfig, echo: Echo) {
  const itemId = `msg_${requestId}`;
  const part = (text: string) => ({ type: 'output_text' as const, text, annotations: [] as never[], logprobs: [] as never[] });
  const message = (status: 'in_progress' | 'completed' | 'incomplete', content: ReturnType<typeof part>[]) => ({
    type: 'message' as const,
    id: itemId,
    status,
    role: 'assistant' as const,
    content,
  });
  const base = (status: 'in_progress' | 'completed' | 'incomplete') => ({
    id: `resp_${requestId}`,
    object: 'response' as const,
    created_at: createdAt,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' as const } : null,
    ...echo,
    model,
    parallel_tool_calls: false,
    previous_response_id: null,
    store: false,
    text: { format: { type: 'text' as const } },
    tool_choice: 'none' as const,
    tools: [] as never[],
    truncation: 'disabled' as const,
    metadata: {},
  });
  return {
    itemId,
    part,
    message,
    started: () => ({ ...base('in_progress'), output: [], usage: null }),
    final(out: Executed, text: string) {
      const status = out.result.finishReason === 'length' ? ('incomplete' as const) : ('completed' as const);
      return {
        ...base(status),
        output: [message(status, [part(text)])],
        usage: {
          input_tokens: out.inputTokens,
          input_tokens_details: { cached_tokens: 0 as const },
          output_tokens: out.outputTokens,
          output_tokens_details: { reasoning_tokens: 0 as const },
          total_tokens: out.inputTokens + out.outputTokens,
          // The TokensDebited amount of this request, exact (as usage.cost on chat completions).
          cost: formatUsd(out.costNanoUsd),
        },
      };
    },
  };
}
