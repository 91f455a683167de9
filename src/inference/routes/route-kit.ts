import type { RequestHandler, Response } from 'express';
import { StoreUnavailable } from '../../platform/eventstore/port';
import { UpstreamError } from '../backend';
import type { KeyIndex } from '../../accounts';
import type { Services } from '../../services';
import { HttpError } from '../../platform/http/middleware/errors';
import { authenticate, OnKeyUsed } from './auth';
import type { Executed, InferenceEngine, Prepared } from '../usecases/engine';
import type { Admission } from './admission';
import { rateHeadersOnly } from './rate-limit';
import { admitter, countedOnly } from './admit';
import { disconnectSignal, EventStreamWriter } from '../../platform/http/sse';
import { keepsRunningWhenLeft } from './idempotency';

/** What the spec routes and the OpenAI-compatible routes share: the middleware chain, and how a request is prepared and a whole reply collected (paths: ./paths.ts, contracts: ./schemas.ts). */

export interface RouterDeps {
  engine: InferenceEngine;
  keys: KeyIndex;
  admission: Admission;
  /** RATE_LIMIT_PER_MINUTE: a key's limit unless an operator changed it. */
  ratePerMinute: number;
  /** Prefix of the rate-limit counters ("{prefix}rl:inference"), for the model list's headers. */
  rateCounterPrefix: string;
  onKeyUsed?: OnKeyUsed;
  /** Idempotency-Key on the generation routes (./idempotency.ts); absent: the header is ignored. */
  idempotency?: RequestHandler;
}

export function upstreamDetail(err: unknown): string {
  const status = err instanceof UpstreamError && err.status ? ` (HTTP ${err.status})` : '';
  const timedOut = err instanceof UpstreamError && /longer than/.test(err.message) ? ' (timed out)' : '';
  return `The model upstream failed${status}${timedOut}; please retry`;
}

export const UNRECORDED = 'The reply could not be recorded: the event store cannot be written';

/**
 * How a streamed generation ended: 'gone' (the caller left), null (the reply is complete), or the
 * failure to report inside the stream. A failure before anything was sent is thrown instead, so
 * the caller gets a plain error answer: 502 for the upstream, 503 for a reply that was not recorded.
 */
export function streamFailure(out: Executed, started: boolean): 'gone' | { detail: string } | null {
  const reason = out.result.finishReason;
  if (reason === 'client_disconnected') return 'gone';
  const detail = reason === 'upstream_error' ? upstreamDetail(out.result.error) : !out.recorded ? UNRECORDED : null;
  if (detail === null) return null;
  if (!started) throw reason === 'upstream_error' ? new HttpError(502, detail) : new StoreUnavailable(detail);
  return { detail };
}

/** A stream that broke after it started: logged, told to the caller in its own format, ended. Before it started, the error is rethrown. */
export async function endBrokenStream(
  s: Services,
  writer: EventStreamWriter,
  err: unknown,
  requestId: string,
  frame: unknown,
  event?: string,
): Promise<void> {
  if (!writer.isStarted) throw err;
  s.log.error({ err, requestId }, 'stream failed after it started');
  await writer.send(frame, event).catch(() => undefined);
  writer.end();
}

export type RouteKit = ReturnType<typeof routeKit>;

export function routeKit(s: Services, deps: RouterDeps) {
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
  // The model list: a key lookup, no count. The metered routes are admitted in one script (./admit.ts).
  const auth = authenticate(deps.keys, s.now, deps.onKeyUsed);
  const chain = [requestId];
  const rateHeaders = rateHeadersOnly(s.redis, deps.rateCounterPrefix, deps.ratePerMinute);
  // Free calls counted like metered ones (the token count): key check and count, nothing held.
  const counted = [
    requestId,
    countedOnly({
      admission: deps.admission,
      now: s.now,
      defaultPerMinute: deps.ratePerMinute,
      ...(deps.onKeyUsed ? { onKeyUsed: deps.onKeyUsed } : {}),
    }),
  ];
  const prepare = admitter({
    engine,
    admission: deps.admission,
    now: s.now,
    defaultPerMinute: deps.ratePerMinute,
    ...(deps.onKeyUsed ? { onKeyUsed: deps.onKeyUsed } : {}),
  });
  // The generation routes: a retry with a used Idempotency-Key is answered before anything is
  // admitted or billed. The reply is kept per key, so a request that carries the header is
  // authenticated first (one lookup, no count); the admission script checks the key again.
  const keyedAuth: RequestHandler = (req, res, next) => (req.header('idempotency-key') === undefined ? next() : auth(req, res, next));
  const generation = deps.idempotency ? [...chain, keyedAuth, deps.idempotency] : chain;

  /** The non-streaming outcome: the text, or the error that replaces it. */
  const wholeAnswer = (out: Executed): 'gone' | 'ok' => {
    if (out.result.finishReason === 'client_disconnected') return 'gone';
    if (out.result.finishReason === 'upstream_error') throw new HttpError(502, upstreamDetail(out.result.error));
    if (!out.recorded) throw new StoreUnavailable(UNRECORDED);
    return 'ok';
  };

  /**
   * A whole reply, for the non-streaming answers. A caller who leaves cancels it (billed the prompt
   * only: it received nothing), unless the call is recorded under an Idempotency-Key: then it runs
   * to its end and is recorded, so the retry gets this answer and is not billed again.
   */
  async function generateWhole(prepared: Prepared, res: Response) {
    let text = '';
    const recorded = keepsRunningWhenLeft(res);
    const out = await engine.execute(prepared, {
      signal: recorded ? new AbortController().signal : disconnectSignal(res),
      streaming: false,
      onText: (t) => {
        text += t;
      },
    });
    return { out, text };
  }

  return { engine, now, requestId, auth, chain, counted, generation, rateHeaders, prepare, wholeAnswer, generateWhole };
}
