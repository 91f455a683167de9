import { Router } from 'express';
import type { Services } from '../../services';
import { mountOpenAiRoutes } from './openai-routes';
import { validate } from '../../platform/http/contract';
import { endBrokenStream, routeKit, RouterDeps, streamFailure } from './route-kit';
import { inference, streaming } from './schemas';
import { disconnectSignal, EventStreamWriter } from '../../platform/http/sse';

export type { RouterDeps } from './route-kit';

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

export function inferenceRouter(s: Services, deps: RouterDeps): Router {
  const r = Router();
  const kit = routeKit(s, deps);
  const { engine, now, chain, prepare, wholeAnswer, generateWhole } = kit;

  r.post(inference.path, ...chain, async (req, res) => {
    const request = validate(inference, req).body;
    const prepared = await prepare(req, res, 'inference', request);
    const { out, text } = await generateWhole(prepared, res);
    if (wholeAnswer(out) === 'gone') return;
    res.json({ created: now(), text });
  });

  r.post(streaming.path, ...chain, async (req, res) => {
    const request = validate(streaming, req).body;
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
      const failure = streamFailure(out, writer.isStarted);
      if (failure === 'gone') return void res.end();
      if (failure) await writer.send(failure, 'error').catch(() => undefined);
      writer.end();
    } catch (err) {
      await endBrokenStream(s, writer, err, prepared.facts.requestId, { detail: 'The stream failed; please retry' }, 'error');
    }
  });

  mountOpenAiRoutes(r, s, kit);
  return r;
}
