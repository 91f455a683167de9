import type { RecordedEvent } from '../platform/eventstore/port';
import { formatUsd } from '../platform/money';
import type { Endpoint, FinishReason, InferenceCompleted, InferenceRequested, ModelConfig, TokensDebited } from './events';

/**
 * One inference request as its events tell it (the `inference-{requestId}` stream), pure: what was
 * asked and held, what was billed at which prices, how it ended, and where the debit sits in the
 * ledger, so any call can be checked against the ledger. Money as USD decimal strings.
 */
export interface ReceiptSignature {
  alg: 'EdDSA';
  /** The JWKS key id (RFC 7638 thumbprint) of the key that signed. */
  kid: string;
  /** The Ed25519 signature of the canonical form (./receipt-signature.ts), base64url. */
  value: string;
}

export interface Receipt {
  requestId: string;
  workspaceId: string;
  key: { keyId: string; name: string | null; last4: string | null };
  config: ModelConfig;
  endpoint: Endpoint;
  /** `open` until InferenceCompleted + TokensDebited are written (then every null below is filled). */
  status: 'open' | 'completed';
  maxTokens: number;
  webSearch: boolean;
  promptTokens: number;
  inputTokens: number | null;
  outputTokens: number | null;
  prices: { inputUsdPerToken: string; outputUsdPerToken: string } | null;
  cost: string | null;
  /** The most the call could cost, held before generating; the whole hold is released when the debit is applied. */
  hold: { reserved: string; released: string | null };
  finishReason: FinishReason | null;
  durationMs: number | null;
  requestedAt: string;
  completedAt: string | null;
  /** The TokensDebited in the event store: its global position (the ledger's order) and its event id. */
  debit: { position: string; eventId: string; at: string } | null;
  /**
   * Credit notes operators issued against this request (billing-{ws}: CreditNoteIssued), oldest
   * first, and their sum. Not signed: a note comes after the receipt's debit and does not change it.
   */
  creditNotes: Array<{ creditNoteId: string; amount: string; reason: string; issuedAt: string }>;
  credited: string;
  /** Ed25519 over the canonical form (./receipt-signature.ts), with the JWKS key id; null while open. */
  signature: ReceiptSignature | null;
}

export function receiptOf(events: RecordedEvent[], key: { name?: string; last4?: string } = {}): Receipt | null {
  const req = events.find((e) => e.type === 'InferenceRequested') as
    RecordedEvent<'InferenceRequested', InferenceRequested['data']> | undefined;
  if (!req) return null;
  const done = events.find((e) => e.type === 'InferenceCompleted') as
    RecordedEvent<'InferenceCompleted', InferenceCompleted['data']> | undefined;
  const debit = events.find((e) => e.type === 'TokensDebited') as RecordedEvent<'TokensDebited', TokensDebited['data']> | undefined;
  const r = req.data;
  const d = debit?.data;
  const reserved = formatUsd(BigInt(r.reservedNanoUsd ?? '0'));
  return {
    requestId: r.requestId,
    workspaceId: r.workspaceId,
    key: { keyId: r.keyId, name: key.name ?? null, last4: key.last4 ?? null },
    config: r.config,
    endpoint: r.endpoint,
    status: debit ? 'completed' : 'open',
    maxTokens: r.maxTokens,
    webSearch: r.webSearch,
    promptTokens: r.promptTokens,
    inputTokens: d ? d.inputTokens : null,
    outputTokens: d ? d.outputTokens : null,
    prices: d
      ? { inputUsdPerToken: formatUsd(BigInt(d.inputPriceNanoUsd)), outputUsdPerToken: formatUsd(BigInt(d.outputPriceNanoUsd)) }
      : null,
    cost: d ? formatUsd(BigInt(d.amountNanoUsd)) : null,
    hold: { reserved, released: debit ? reserved : null },
    finishReason: done?.data.finishReason ?? null,
    durationMs: done?.data.durationMs ?? null,
    requestedAt: req.created,
    completedAt: (done ?? debit)?.created ?? null,
    debit: debit ? { position: debit.position.toString(), eventId: debit.id, at: debit.created } : null,
    creditNotes: [],
    credited: formatUsd(0n),
    signature: null,
  };
}
