import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import type { Receipt, ReceiptSignature } from './receipt';

/**
 * The signature of a completed receipt: Ed25519 over its canonical form, which anyone rebuilds from
 * the receipt's own fields (docs/INFERENCE.md shows it in a few lines of node:crypto): the fields
 * below as one JSON object with its keys sorted and no whitespace. Every value is a string, a whole
 * number or null, so this is also the RFC 8785 (JCS) form. An open receipt (nothing billed yet)
 * has no signature.
 */
export const RECEIPT_FORMAT = 'tollgate.receipt.v1';

type Signable = Omit<Receipt, 'signature'>;

/** The signed fields of a completed receipt, or null while it is open. */
export function signedFieldsOf(r: Signable): Record<string, string | number | null> | null {
  if (!r.debit || !r.prices) return null;
  return {
    format: RECEIPT_FORMAT,
    requestId: r.requestId,
    workspaceId: r.workspaceId,
    keyId: r.key.keyId,
    config: r.config,
    finishReason: r.finishReason,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    inputUsdPerToken: r.prices.inputUsdPerToken,
    outputUsdPerToken: r.prices.outputUsdPerToken,
    cost: r.cost,
    ledgerPosition: r.debit.position,
    ledgerEventId: r.debit.eventId,
    ledgerAt: r.debit.at,
    requestedAt: r.requestedAt,
  };
}

/** The bytes signed: the fields as JSON, keys sorted (they are plain ASCII names), no whitespace. */
export function canonicalReceipt(r: Signable): string | null {
  const f = signedFieldsOf(r);
  return f ? JSON.stringify(Object.fromEntries(Object.entries(f).sort(([a], [b]) => (a < b ? -1 : 1)))) : null;
}

export function signReceipt(r: Signable, key: { kid: string; privateKey: KeyObject }): ReceiptSignature | null {
  const c = canonicalReceipt(r);
  return c ? { alg: 'EdDSA', kid: key.kid, value: sign(null, Buffer.from(c), key.privateKey).toString('base64url') } : null;
}

export type ReceiptCheck = { ok: true; kid: string } | { ok: false; reason: string };

/** Checks a receipt (as the API answered it) against a JWKS's keys, offline. */
export function verifyReceipt(r: Receipt, jwks: { keys: Array<{ kid?: string; kty?: string; crv?: string; x?: string }> }): ReceiptCheck {
  const s = r.signature;
  if (!s) return { ok: false, reason: 'the receipt has no signature (a request still open is not signed)' };
  if (s.alg !== 'EdDSA') return { ok: false, reason: `unknown signature algorithm ${String(s.alg)}` };
  const jwk = jwks.keys.find((k) => k.kid === s.kid);
  if (!jwk || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.x)
    return { ok: false, reason: `no Ed25519 key with kid ${s.kid} in the key set` };
  const c = canonicalReceipt(r);
  if (!c) return { ok: false, reason: 'the receipt lacks the billed fields its signature covers' };
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  return verify(null, Buffer.from(c), publicKey, Buffer.from(s.value, 'base64url'))
    ? { ok: true, kid: s.kid }
    : { ok: false, reason: 'the signature does not match the receipt (altered, or signed by another key)' };
}
