import type { Router } from 'express';
import { requireMember, requireSession, workspaceOf } from '../../accounts/routes';
import { mount } from '../../platform/http/mount';
import { HttpError, methodNotAllowed } from '../../platform/http/middleware/errors';
import type { Services } from '../../services';
import { countRequest } from '../usecases/count';
import { readReceipt } from '../usecases/receipts';
import { apiKeyOf } from './auth';
import { countTokens, jwks, keyReceipt, workspaceReceipt } from './caller-schemas';
import { jwksOf } from '../../platform/crypto/signing-key';
import type { RouteKit } from './route-kit';

/** The receipts (members, and the key itself) and the token count (./caller-schemas.ts). */
export function mountCallerRoutes(r: Router, s: Services, kit: RouteKit): void {
  const prices = {
    inputNanoUsdPerToken: s.config.PRICE_INPUT_NANO_USD_PER_TOKEN,
    outputNanoUsdPerToken: s.config.PRICE_OUTPUT_NANO_USD_PER_TOKEN,
  };

  mount(r, workspaceReceipt, requireSession(s), requireMember(s), async (_req, res, { params: { requestId } }) => {
    const receipt = await readReceipt(s, requestId, { workspaceId: workspaceOf(res).workspaceId });
    if (!receipt) throw new HttpError(404, 'No such request in this workspace');
    res.setHeader('Cache-Control', 'no-store');
    res.json(receipt);
  });

  mount(r, keyReceipt, kit.requestId, kit.auth, async (_req, res, { params: { requestId } }) => {
    const key = apiKeyOf(res);
    const receipt = await readReceipt(s, requestId, { workspaceId: key.workspaceId, keyId: key.keyId });
    if (!receipt) throw new HttpError(404, 'No such request sent by this key');
    res.setHeader('Cache-Control', 'no-store');
    res.json(receipt);
  });

  // Public and cacheable for a while: a rotation adds a key, and old keys stay listed.
  mount(r, jwks, (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(jwksOf(s.signingKeys));
  });
  r.all(jwks.path, methodNotAllowed('GET', 'HEAD'));

  // Counted in the key's rate limit like a call, billed nothing.
  mount(r, countTokens, ...kit.counted, (_req, res, { body: request }) => {
    res.json(countRequest(request, prices, s.now()));
  });
}
