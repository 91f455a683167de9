import { createHash } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { stringify as canonicalJson } from 'safe-stable-stringify';
import { HttpError } from '../../platform/http/middleware/errors';
import type { IdempotencyStore, RecordedReply } from '../idempotency/store';
import { apiKeyOf } from './auth';

/**
 * `Idempotency-Key` on the inference routes (docs/INFERENCE.md, "Safe retries"). After auth and the
 * rate limit, before the handler:
 *   - no header: nothing changes;
 *   - a bad key: 422 naming the header;
 *   - first use: the call runs and, if it answers 200 to the end, its answer (headers and body,
 *     write by write) is recorded for the window;
 *   - the same key and request again: the recorded answer, written again (streamed if it was), with
 *     `Idempotent-Replayed: true`; the handler does not run, so nothing is billed;
 *   - the same key with another request: 422; while the first still runs: 409 with Retry-After.
 * An answer that was not 200, or a stream the caller left, frees the key (nothing was billed, or
 * only what was generated before the caller left): a retry is a new call.
 */

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const VALID_KEY = /^[\x21-\x7e]{1,255}$/;
/** The headers of an answer that belong to it (and not to the request that replays it). */
const KEPT_HEADERS = /^(content-type|cache-control|x-accel-buffering|x-request-id|x-usage-.*)$/;

function headerProblem(msg: string, type: string): HttpError {
  return new HttpError(422, [{ loc: ['header', IDEMPOTENCY_HEADER], msg, type }]);
}

/**
 * The request as the key binds it: the route, the query and the body, as canonical JSON (object
 * keys sorted at every depth), so a retry that serialises the same body with its keys in another
 * order is the same request.
 */
export function requestHash(method: string, path: string, query: unknown, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(query ?? {})}\n${canonicalJson(body ?? null)}`)
    .digest('base64url');
}

export function idempotency(store: IdempotencyStore, onTakeover: (previousRequestId: string) => Promise<void>): RequestHandler {
  return async (req, res, next) => {
    const given = req.header(IDEMPOTENCY_HEADER);
    if (given === undefined) return next();
    if (given.length > 255)
      throw headerProblem(
        `${IDEMPOTENCY_HEADER} is ${given.length} characters long; at most 255 are allowed (a uuid is 36)`,
        'string_too_long',
      );
    if (!VALID_KEY.test(given))
      throw headerProblem(
        `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters, without spaces (e.g. a uuid)`,
        'string_pattern_mismatch',
      );

    const key = store.key(apiKeyOf(res).keyId, given);
    const startedMs = store.nowMs();
    const claim = await store.claim(
      key,
      requestHash(req.method, req.baseUrl + req.path, req.query, req.body),
      res.locals.inferenceId as string,
    );
    if (claim.kind === 'mismatch') {
      throw headerProblem(
        `This ${IDEMPOTENCY_HEADER} was already used with a different request (path, query or body); send a new key for a new request`,
        'idempotency_key_reused',
      );
    }
    if (claim.kind === 'running') {
      throw new HttpError(409, `A request with this ${IDEMPOTENCY_HEADER} is still running; retry when it has finished`, {
        'Retry-After': String(claim.retryAfterSeconds),
      });
    }
    if (claim.kind === 'done') return replay(res, claim.reply);

    // A running record whose lease ran out: its process died. Its request is closed unbilled first.
    if (claim.previousRequestId) await onTakeover(claim.previousRequestId);
    record(res, store, key, claim.token, startedMs);
    next();
  };
}

/**
 * For a non-streaming answer of a call recorded under an Idempotency-Key: the generation goes on
 * after the caller left, and its answer is still recorded for the retry (docs/INFERENCE.md, "Safe
 * retries"). A stream the caller left frees the key instead.
 */
export function keepsRunningWhenLeft(res: Response): boolean {
  if (res.locals.idempotencyRecord !== true) return false;
  res.locals.keepRunningWhenLeft = true;
  return true;
}

/** Captures the answer as written and records it when it finished with 200; frees the key otherwise. */
function record(res: Response, store: IdempotencyStore, key: string, token: string, startedMs: number): void {
  res.locals.idempotencyRecord = true;
  const chunks: string[] = [];
  const capture = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    chunks.push(
      Buffer.isBuffer(chunk)
        ? chunk.toString('utf8')
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8').toString('utf8'),
    );
  };
  const write = res.write.bind(res) as (...a: unknown[]) => boolean;
  const end = res.end.bind(res) as (...a: unknown[]) => Response;
  res.write = ((...a: unknown[]) => {
    capture(a[0], a[1]);
    return write(...a);
  }) as Response['write'];
  const renewal = setInterval(() => void store.renew(key, token).catch(() => undefined), Math.max(100, store.leaseMs / 3));
  renewal.unref();
  let settled = false;
  /** Records (a 200 answered to its end) or frees the key; the answer's end waits for it, so a retry that follows sees it. */
  const settle = async (finished: boolean): Promise<void> => {
    if (settled) return;
    settled = true;
    clearInterval(renewal);
    try {
      if (finished && res.statusCode === 200) {
        store.observeDuration(store.nowMs() - startedMs);
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.getHeaders())) {
          if (KEPT_HEADERS.test(name) && value !== undefined) headers[name] = String(value);
        }
        if (await store.complete(key, token, { status: 200, headers, chunks })) return;
      }
      await store.release(key, token);
    } catch {
      // Redis unreachable: the record's lease runs out, and a retry takes the key over as after a crash.
    }
  };
  const kept = () => res.locals.keepRunningWhenLeft === true;
  res.end = ((...a: unknown[]) => {
    capture(a[0], a[1]);
    if (settled || (res.destroyed && !kept())) return end(...a);
    void settle(true).finally(() => end(...a));
    return res;
  }) as Response['end'];
  // A caller who left before the end frees the key, unless the answer is still coming (kept).
  res.on('close', () => {
    if (!res.writableFinished && kept()) return;
    void settle(false);
  });
}

/** The recorded answer again, write by write (a stream is streamed again), marked as a replay. */
function replay(res: Response, reply: RecordedReply): void {
  res.status(reply.status);
  for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  res.setHeader('Idempotent-Replayed', 'true');
  if (reply.headers['content-type']?.startsWith('text/event-stream')) res.flushHeaders();
  for (const chunk of reply.chunks) res.write(chunk);
  res.end();
}
