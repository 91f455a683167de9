import type { Request, RequestHandler, Response } from 'express';
import { hashKey } from '../../accounts';
import { periodIdsAt } from '../../platform/budget-periods';
import type { Endpoint } from '../events';
import type { InferenceRequest } from '../request';
import type { InferenceEngine, Plan, Prepared, Rendered } from '../usecases/engine';
import type { Admission, Admitted } from './admission';
import { paymentRefusal } from '../usecases/refusals';
import { bearerSecret, expiredKey, forbidden, INFERENCE_SCOPE, KEYS_UNAVAILABLE, OnKeyUsed, unknownKey } from './auth';
import { applyRateVerdict, rateVerdict } from './rate-limit';
import { setBudgetRemaining } from './usage-headers';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface AdmitDeps {
  engine: InferenceEngine;
  admission: Admission;
  now: () => Date;
  defaultPerMinute: number;
  onKeyUsed?: OnKeyUsed;
}

/**
 * From a metered request to its recorded InferenceRequested, with one Redis round trip before it:
 *
 *   header (401, no I/O) → parse and plan the body (CPU: validation, the exact prompt count) →
 *   the admission script (401 unknown/expired, 403 scope, 429, 402 balance or budget) → record.
 *
 * The answers and their order are those of separate steps: a body that fails validation or the
 * window check is refused only after the key was checked and counted (its error is held until
 * then), so an unauthenticated caller still gets 401 and a limited one 429. A request that
 * searches the web is admitted without an amount and reserves after the search (a second trip:
 * the results are part of the billed prompt).
 */
export function admitter(d: AdmitDeps) {
  const known = new RecentKeys();
  return async function admit(req: Request, res: Response, endpoint: Endpoint, parse: () => InferenceRequest): Promise<Prepared> {
    const secret = bearerSecret(req);
    const keyHash = hashKey(secret);
    let rendered: Rendered | undefined;
    let plan: Plan | undefined;
    let refused: unknown;
    try {
      rendered = d.engine.render(parse());
      // The cheap first check: a long prompt from a key this process has not just admitted is
      // counted only once the key is known (see RecentKeys).
      if (rendered.prompt.text.length <= EAGER_COUNT_CHARS || known.has(keyHash, d.now().getTime())) plan = d.engine.count(rendered);
    } catch (err) {
      refused = err;
    }
    const requestId = res.locals.inferenceId as string;
    const now = rendered?.now ?? d.now();
    let admitted;
    try {
      admitted = await d.admission.admit({
        keyHash,
        scope: INFERENCE_SCOPE,
        now,
        requestId,
        amount: plan && !plan.search ? plan.reserved : null,
        periods: periodIdsAt(now),
      });
    } catch {
      throw KEYS_UNAVAILABLE();
    }
    const passed = keyAdmitted(d, res, secret, admitted, now, () => known.add(keyHash, d.now().getTime()));
    const { key } = passed;
    if (refused) throw refused;
    plan ??= d.engine.count(rendered!);
    const given = req.header('x-request-id');
    const input = { requestId, key, endpoint, ...(given && SAFE_ID.test(given) ? { clientRequestId: given } : {}) };
    if (!passed.held) {
      const prepared = await d.engine.prepare({ ...input, request: plan.request }, plan);
      setBudgetRemaining(res, prepared.tightest);
      return prepared;
    }
    const refusal = paymentRefusal(key, plan.reserved, passed.held, now);
    if (refusal) throw refusal;
    // From the reserve script's own reply: no read beyond admission.
    if (passed.held.ok) setBudgetRemaining(res, passed.held.tightest);
    return d.engine.record(input, plan);
  };
}

/**
 * The key's verdict from the admission script: 401 unknown or expired, 403 scope, 429 over its
 * limit (with the rate-limit headers on every answer). `allowed` runs when the request is within it.
 */
function keyAdmitted(
  d: AdmitDeps,
  res: Response,
  secret: string,
  admitted: Admitted,
  now: Date,
  allowed: () => void = () => undefined,
): Extract<Admitted, { step: 'counted' }> {
  if (admitted.step === 'unknown') throw unknownKey(secret);
  if (admitted.step === 'expired') throw expiredKey(admitted.key);
  if (admitted.step === 'forbidden') throw forbidden();
  const { key } = admitted;
  if (d.onKeyUsed) void d.onKeyUsed(key, now).catch(() => undefined);
  res.locals.apiKey = key;
  const verdict = rateVerdict(admitted.counted);
  if (verdict.allowed) allowed();
  applyRateVerdict(res, verdict);
  return admitted;
}

/**
 * A free call counted like a metered one (the token count): the same admission script without an
 * amount, so the key is checked and the request counted in its window in one trip, and nothing held.
 */
export function countedOnly(d: Omit<AdmitDeps, 'engine'>): RequestHandler {
  return async (req, res, next) => {
    const secret = bearerSecret(req);
    const now = d.now();
    let admitted;
    try {
      admitted = await d.admission.admit({
        keyHash: hashKey(secret),
        scope: INFERENCE_SCOPE,
        now,
        requestId: res.locals.inferenceId as string,
        amount: null,
        periods: periodIdsAt(now),
      });
    } catch {
      throw KEYS_UNAVAILABLE();
    }
    keyAdmitted(d as AdmitDeps, res, secret, admitted, now);
    next();
  };
}

/**
 * Prompts up to this many UTF-16 units are counted before the admission script whoever sends them.
 * Counting the longest prompt the window check lets through (131,072 units) costs 0.2–0.5 s of CPU
 * (docs/BENCHMARKS.md), 30–60 times the parse of the largest body (2 MB): an unauthenticated caller
 * must not be able to buy that. 4,096 units cost at most a few ms, less than parsing a large body.
 */
const EAGER_COUNT_CHARS = 4096;

/**
 * Key hashes this process admitted (within their rate limit) in the last minute: a long prompt from
 * one of them is counted before the script, so the usual caller keeps the single round trip. Any
 * other long prompt is admitted first (no amount), counted, then reserved in a second trip.
 */
class RecentKeys {
  private readonly seen = new Map<string, number>();

  has(keyHash: string, nowMs: number): boolean {
    const at = this.seen.get(keyHash);
    return at !== undefined && nowMs - at < 60_000;
  }

  add(keyHash: string, nowMs: number): void {
    if (this.seen.size >= 10_000 && !this.seen.has(keyHash)) this.seen.clear();
    this.seen.set(keyHash, nowMs);
  }
}
