import { conflict, invalid, paymentRequired, refused, unavailable } from '../../platform/errors';
import { GatewayRejected, GatewayUnavailable } from '../payments/port';

/**
 * What a payment gateway's refusal means to the caller, as a DomainError (mapped to HTTP in one
 * place): a reused idempotency key is a conflict; a refusal about a value the client sent (`field`:
 * an unknown payment method) is an invalid value like any other; a declined card is payment
 * required; any other refusal is the provider's own message; a provider out of reach is unavailable.
 */
export function gatewayError(err: unknown, field?: string): unknown {
  if (err instanceof GatewayRejected) {
    if (err.code === 'idempotency_error') return conflict(err.message);
    if (field && err.status !== 402) return invalid(`The payment provider refused it: ${err.message}`, field);
    return err.status === 402
      ? paymentRequired(`The payment provider refused: ${err.message}`)
      : refused(`The payment provider refused: ${err.message}`);
  }
  if (err instanceof GatewayUnavailable) return unavailable('The payment provider is unavailable; try again shortly', 5);
  return err;
}
