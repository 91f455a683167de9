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
 * A workspace's admins, the auto-reload worker and Stripe's webhook all write billing-{ws}: twenty
 * deposits sent at once lose up to nineteen rounds of the exact-revision append between them. Each
 * loser decides again on the new state (a deposit is still valid: it only needs the card and the
 * minimum), after a short random pause so the losers of one round do not collide again in lockstep.
 */
const BILLING_RETRIES = 60;
const pauseBeforeRetry = (jitter: () => number) => (attempt: number) =>
  new Promise<void>((ok) => setTimeout(ok, jitter() * Math.min(2 + attempt * 2, 25)));

/** A fraction in [0, 1) drawn from the id source (Services.newId), so a simulated run replays it. */
const jitterFrom = (newId: () => string) => () => parseInt(newId().replace(/-/g, '').slice(0, 8), 16) / 2 ** 32;

/**
 * One billing command through handleCommand on billing-{workspaceId}: load, decide, append with the
 * exact revision, deciding again on a conflict (see BILLING_RETRIES). `command` may look at the state
 * first (null: nothing to do).
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
    { metadata, newId: s.newId, retries: BILLING_RETRIES, beforeRetry: pauseBeforeRetry(jitterFrom(s.newId)) },
  );
  return { appended: h.appended, events: h.events, ...h.result };
}
