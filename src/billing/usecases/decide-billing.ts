import type { BillingCommand } from '../commands';
import { billingDecider, decide } from '../decide';
import type { BillingEvent } from '../events';
import { evolveDecided } from '../evolve';
import type { BillingState } from '../state';
import { streams } from '../../platform/streams';
import { handleCommand } from '../../platform/eventstore/command-handler';
import type { AppendResult, EventMetadata } from '../../platform/eventstore/port';
import type { Services } from '../../services';

export interface BillingDecided {
  /** Undefined when the decision produced no events. */
  appended?: AppendResult;
  events: BillingEvent[];
  /** The state the command was decided on, and the state after its events: what the caller reads its result from. */
  before: BillingState;
  after: BillingState;
}

/**
 * One billing command through handleCommand on billing-{workspaceId}: load, decide, append with the
 * exact revision. `command` may look at the state first (null: nothing to do).
 */
export async function decideBilling(
  s: Pick<Services, 'store' | 'now' | 'newId'>,
  workspaceId: string,
  command: BillingCommand | ((state: BillingState) => BillingCommand | null),
  metadata: EventMetadata,
): Promise<BillingDecided> {
  const h = await handleCommand(
    s.store,
    streams.billing(workspaceId),
    billingDecider,
    (before) => {
      const c = typeof command === 'function' ? command(before) : command;
      const events = c ? decide(c, before) : [];
      return { events, result: { before, after: evolveDecided(before, events, s.now().toISOString()) } };
    },
    { metadata, newId: s.newId },
  );
  return { appended: h.appended, events: h.events, ...h.result };
}
