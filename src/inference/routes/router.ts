import { Router } from 'express';
import type { Services } from '../../services';
import { mountOpenAiRoutes } from './openai-routes';
import { mountCallerRoutes } from './caller-routes';
import { mountResponsesRoute } from './responses-routes';
import { deferValidation, mount } from '../../platform/http/mount';
import { methodNotAllowed } from '../../platform/http/middleware/errors';
import { endBrokenStream, routeKit, RouterDeps, streamFailure } from './route-kit';
import { inference, streaming } from './schemas';
import { disconnectSignal, EventStreamWriter, sseFrame } from '../../platform/http/sse';
import { setUsageHeaders, usageFrame } from './usage-headers';

export type { RouterDeps } from './route-kit';

/**
 * The inference routes:
 *   POST /external/api/inference                                  {"created", "text"}
 *   POST /external/api/inference/streaming                        text/event-stream of
 *        data: {"created","idx","index","text"}; a failure after the stream started ends it with
 *        event: error / data: {"detail": "…"}
 *   POST /external/api/inference/openai/v1/chat/completions       OpenAI chat completions
 *   POST /external/api/inference/openai/v1/responses              OpenAI Responses API (text)
 *   GET  /external/api/inference/openai/v1/models                 the two configs
 * Every response carries x-request-id: the inference request id (the `requestId` of its events).
 */

export function inferenceRouter(s: Services, deps: RouterDeps): Router {
  const r = Router();
  const kit = routeKit(s, deps);
  const { engine, now, generation, prepare, wholeAnswer, generateWhole } = kit;

  // Validated inside `prepare`, after the key is admitted (./admit.ts): deferred.
  mount(
    r,
    inference,
    ...generation,
    deferValidation(async (req, res, read) => {
      const prepared = await prepare(req, res, 'inference', () => read(req).body);
      const { out, text } = await generateWhole(prepared, res);
      if (wholeAnswer(out) === 'gone') return;
      setUsageHeaders(res, out);
      res.json({ created: now(), text });
    }),
  );

  mount(
    r,
    streaming,
    ...generation,
    deferValidation(async (req, res, read) => {
      let query!: ReturnType<typeof read>['query'];
      const prepared = await prepare(req, res, 'streaming', () => {
        const valid = read(req);
        query = valid.query;
        return valid.body;
      });
      const writer = new EventStreamWriter(res);
      let idx = 0;
      try {
        const out = await engine.execute(prepared, {
          signal: disconnectSignal(res),
          streaming: true,
          onText: (text) => {
            const i = idx++;
            return writer.write(sseFrame({ created: now(), idx: i, index: i, text }));
          },
        });
        const failure = streamFailure(out, writer.isStarted);
        if (failure === 'gone') return void res.end();
        if (failure) await writer.send(failure, 'error').catch(() => undefined);
        // Opt-in (?include_usage=true), last and under its own event name: the default stream is unchanged.
        else if (query.include_usage === 'true') await writer.send(usageFrame(prepared.facts.requestId, out), 'usage');
        writer.end();
      } catch (err) {
        await endBrokenStream(s, writer, err, prepared.facts.requestId, { detail: 'The stream failed; please retry' }, 'error');
      }
    }),
  );

  mountCallerRoutes(r, s, kit);
  mountOpenAiRoutes(r, s, kit);
  mountResponsesRoute(r, s, kit);
  r.all([inference.path, streaming.path], methodNotAllowed('POST'));
  return r;
}
