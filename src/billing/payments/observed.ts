import type { ChargeRequest, ChargeResult, PaymentGateway } from './port';
import { GatewayRejected, GatewayUnavailable } from './port';
import type { Metrics } from '../../platform/metrics/metrics';

const KINDS = new Set(['deposit', 'reload']);

/** The PaymentGateway port, counting each charge's outcome (tollgate_payments_total). */
export function observeGateway(gateway: PaymentGateway, metrics: Metrics): PaymentGateway {
  const count = (req: ChargeRequest, outcome: string) =>
    metrics.payments.inc({
      gateway: gateway.kind,
      kind: KINDS.has(req.metadata.tollgate_kind) ? req.metadata.tollgate_kind : 'other',
      outcome,
    });
  const observed: PaymentGateway = Object.create(gateway) as PaymentGateway;
  observed.charge = async (req: ChargeRequest): Promise<ChargeResult> => {
    try {
      const result = await gateway.charge(req);
      count(req, result.status);
      return result;
    } catch (err) {
      count(req, err instanceof GatewayUnavailable ? 'unavailable' : err instanceof GatewayRejected ? 'rejected' : 'error');
      throw err;
    }
  };
  return observed;
}
