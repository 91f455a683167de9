import type { Router } from 'express';
import { requireMember, requireSession, workspaceOf } from '../../accounts/routes';
import { validate } from '../../platform/http/contract';
import { HttpError } from '../../platform/http/middleware/errors';
import type { Services } from '../../services';
import { countRequest } from '../usecases/count';
import { readReceipt } from '../usecases/receipts';
import { apiKeyOf } from './auth';
import { countTokens, keyReceipt, workspaceReceipt } from './caller-schemas';
import type { RouteKit } from './route-kit';

/** The receipts (members, and the key itself) and the token count (./caller-schemas.ts). */
export function mountCallerRoutes(r: Router, s: Services, kit: RouteKit): void {
  const prices = { inputNanoUsdPerToken: s.config.PRICE_INPUT_NANO_USD_PER_TOKEN, outputNanoUsdPerToken: s.config.PRICE_OUTPUT_NANO_USD_PER_TOKEN };

  r.get(workspaceReceipt.path, requireSession(s), requireMember(s), async (req, res) => {
    const { requestId } = validate(workspaceReceipt, req).params;
    const receipt = await readReceipt(s, requestId, { workspaceId: workspaceOf(res).workspaceId });
    if (!receipt) throw new HttpError(404, 'No such request in this workspace');
    res.setHeader('Cache-Control', 'no-store');
    res.json(receipt);
  });

  r.get(keyReceipt.path, kit.requestId, kit.auth, async (req, res) => {
    const { requestId } = validate(keyReceipt, req).params;
    const key = apiKeyOf(res);
    const receipt = await readReceipt(s, requestId, { workspaceId: key.workspaceId, keyId: key.keyId });
    if (!receipt) throw new HttpError(404, 'No such request sent by this key');
    res.setHeader('Cache-Control', 'no-store');
    res.json(receipt);
  });

  // Counted in the key's rate limit like a call, billed nothing.
  r.post(countTokens.path, ...kit.counted, (req, res) => {
    const request = validate(countTokens, req).body;
    res.json(countRequest(request, prices, s.now()));
  });
}
