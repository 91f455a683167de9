import type { RequestReceipt } from '../api-types';
import { dateTime, integer, usd } from '../format';

/** Why generation ended, in words (the receipt's `finishReason`). */
const FINISH_REASONS: Record<NonNullable<RequestReceipt['finishReason']>, string> = {
  stop: 'the model finished its answer',
  length: 'max_tokens reached',
  client_disconnected: 'the caller left before the end',
  upstream_error: 'the model upstream failed',
  abandoned: 'abandoned (its process stopped)',
  store_unavailable: 'the event store could not be written',
  superseded: 'superseded by a retry with the same Idempotency-Key',
};

/** The receipt's rows: label and value. */
export function receiptRows(r: RequestReceipt): Array<[string, string]> {
  return [
    ['Request', r.requestId],
    ['Key', `${r.key.name ?? 'deleted key'}${r.key.last4 ? ` (…${r.key.last4})` : ''}`],
    ['Config', r.config],
    ['Endpoint', r.endpoint],
    ['Status', r.status === 'open' ? 'running' : 'completed'],
    ['Finish reason', r.finishReason ? (FINISH_REASONS[r.finishReason] ?? r.finishReason) : '—'],
    ['Prompt tokens billed', r.inputTokens === null ? '—' : integer(r.inputTokens)],
    ['Output tokens billed', r.outputTokens === null ? '—' : `${integer(r.outputTokens)} of at most ${integer(r.maxTokens)}`],
    ['Price per input token', r.prices ? usd(r.prices.inputUsdPerToken) : '—'],
    ['Price per output token', r.prices ? usd(r.prices.outputUsdPerToken) : '—'],
    ['Cost', r.cost === null ? '—' : usd(r.cost, { minDecimals: 2 })],
    ['Held before generating', usd(r.hold.reserved, { minDecimals: 2 })],
    ['Hold released', r.hold.released === null ? 'not yet' : usd(r.hold.released, { minDecimals: 2 })],
    ['Requested', dateTime(r.requestedAt)],
    ['Completed', r.completedAt ? `${dateTime(r.completedAt)}${r.durationMs !== null ? ` (${integer(r.durationMs)} ms)` : ''}` : '—'],
    ['Ledger position of the debit', r.debit ? r.debit.position : '—'],
  ];
}
