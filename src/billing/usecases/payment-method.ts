import { billingDecider } from '../decide';
import type { PaymentMethodOnFile } from '../state';
import { streams } from '../../platform/streams';
import { loadState } from '../../platform/eventstore/command-handler';
import type { EventMetadata } from '../../platform/eventstore/port';
import type { Services } from '../../services';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { decideBilling } from './decide-billing';
import { gatewayError } from './gateway-errors';

type Deps = Pick<Services, 'store' | 'gateway' | 'now' | 'newId' | 'progress' | 'config' | 'log'>;

/**
 * Attaches a card: the gateway checks it (and makes the workspace's customer on first use, with
 * the customer already on file otherwise), then PaymentMethodAttached records it. Attaching the card
 * on file again changes nothing, unless auto-reload is suspended (a new attach lifts that).
 */
export async function attachPaymentMethod(
  s: Deps,
  cmd: { workspaceId: string; paymentMethodId: string; metadata: EventMetadata },
): Promise<PaymentMethodOnFile> {
  try {
    const { state } = await loadState(s.store, streams.billing(cmd.workspaceId), billingDecider);
    const pm = await s.gateway.attachPaymentMethod({
      workspaceId: cmd.workspaceId,
      customerId: state.customerId,
      paymentMethodId: cmd.paymentMethodId,
    });
    const done = await decideBilling(
      s,
      cmd.workspaceId,
      {
        type: 'AttachPaymentMethod',
        data: {
          workspaceId: cmd.workspaceId,
          paymentMethodId: pm.paymentMethodId,
          brand: pm.brand,
          last4: pm.last4,
          customerId: pm.customerId,
          gateway: s.gateway.kind,
        },
      },
      cmd.metadata,
    );
    await readYourWrites(s, done.appended);
    return done.after.paymentMethod!;
  } catch (err) {
    throw gatewayError(err, 'paymentMethodId');
  }
}
