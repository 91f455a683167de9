import type { Request, Response } from 'express';
import { budgetMonth } from '../../accounts/budget';
import { hashKey } from '../../accounts/projections/key-index/queries';
import type { Endpoint } from '../events';
import type { InferenceRequest } from '../request';
import type { InferenceEngine, Plan, Prepared } from '../usecases/engine';
import type { Admission } from './admission';
import { bearerSecret, expiredKey, forbidden, INFERENCE_SCOPE, KEYS_UNAVAILABLE, OnKeyUsed, unknownKey } from './auth';
import { applyRateVerdict, rateVerdict } from './rate-limit';

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
  return async function admit(req: Request, res: Response, endpoint: Endpoint, parse: () => InferenceRequest): Promise<Prepared> {
    const secret = bearerSecret(req);
    let plan: Plan | undefined;
    let refused: unknown;
    try {
      plan = d.engine.plan(parse());
    } catch (err) {
      refused = err;
    }
    const requestId = res.locals.inferenceId as string;
    const now = plan?.now ?? d.now();
    let admitted;
    try {
      admitted = await d.admission.admit({
        keyHash: hashKey(secret),
        scope: INFERENCE_SCOPE,
        now,
        requestId,
        amount: plan && !plan.search ? plan.reserved : null,
        month: budgetMonth(now.toISOString()),
      });
    } catch {
      throw KEYS_UNAVAILABLE();
    }
    if (admitted.step === 'unknown') throw unknownKey(secret);
    if (admitted.step === 'expired') throw expiredKey(admitted.key);
    if (admitted.step === 'forbidden') throw forbidden();
    const { key } = admitted;
    if (d.onKeyUsed) void d.onKeyUsed(key, now).catch(() => undefined);
    res.locals.apiKey = key;
    applyRateVerdict(res, rateVerdict(admitted.counted, key.rateLimit, d.defaultPerMinute));
    if (!plan) throw refused;
    const given = req.header('x-request-id');
    const input = { requestId, key, endpoint, ...(given && SAFE_ID.test(given) ? { clientRequestId: given } : {}) };
    if (!admitted.held) return d.engine.prepare({ ...input, request: plan.request }, plan);
    const refusal = d.engine.refusal(key, plan.reserved, admitted.held);
    if (refusal) throw refusal;
    return d.engine.record(input, plan);
  };
}
