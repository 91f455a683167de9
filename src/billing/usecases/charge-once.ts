import type { ChargeOutcome } from '../commands';
import type { ChargeRequest, PaymentGateway } from '../payments/port';
import { GatewayRejected } from '../payments/port';
import type { Logger } from '../../platform/log';

/**
 * Why a charge that wants 3-D Secure failed, in the words its ledger entry has always carried
 * (the reason is written into DepositFailed / AutoReloadFailed, so it never changes): a deposit is
 * made by someone in the portal, a reload by nobody.
 */
const AUTHENTICATION_REASON = {
  deposit: 'The card requires authentication (3-D Secure), which tollgate cannot complete; use another card',
  reload: 'The card needs authentication, which an automatic charge cannot do',
} as const;

/**
 * Charges once and says how the charge ended, for a deposit and an auto-reload alike:
 * succeeded; or failed, with the decline code when there is one. A PaymentIntent that wants 3-D
 * Secure is cancelled on the way (nobody can complete it here, and it must never succeed later).
 * A refusal before any money moved (the card was removed, say) is a failure too; a reused
 * idempotency key and an unknown outcome (GatewayUnavailable: retry with the same key) are thrown.
 */
export async function chargeOnce(
  d: { gateway: PaymentGateway; log: Logger },
  kind: keyof typeof AUTHENTICATION_REASON,
  request: ChargeRequest,
): Promise<ChargeOutcome> {
  try {
    const res = await d.gateway.charge(request);
    if (res.status === 'succeeded') return { status: 'succeeded', paymentIntentId: res.paymentIntentId };
    if (res.status === 'requires_action') {
      await d.gateway
        .cancel(res.paymentIntentId)
        .catch((err) => d.log.warn({ err, pi: res.paymentIntentId }, 'could not cancel a PaymentIntent'));
      return {
        status: 'failed',
        paymentIntentId: res.paymentIntentId,
        code: 'authentication_required',
        reason: AUTHENTICATION_REASON[kind],
      };
    }
    return { status: 'failed', paymentIntentId: res.paymentIntentId, code: res.declineCode ?? res.code, reason: res.reason };
  } catch (err) {
    if (err instanceof GatewayRejected && err.code !== 'idempotency_error') {
      return { status: 'failed', paymentIntentId: null, code: err.code, reason: err.message };
    }
    throw err;
  }
}
