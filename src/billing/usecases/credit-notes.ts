import { nameUuid } from '../ids';
import { fold } from '../evolve';
import { creditedOf } from '../decide';
import type { BillingEvent } from '../events';
import type { CreditNoteRecord } from '../state';
import type { TokensDebited } from '../../inference/events';
import { conflict, notFound } from '../../platform/errors';
import type { EventRecord } from '../../platform/event';
import type { NanoUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import { decideBilling } from './decide-billing';

type Deps = Pick<Services, 'store' | 'now' | 'newId' | 'progress' | 'config' | 'log'>;

/** The credit note an operator's Idempotency-Key stands for, within one workspace. */
export const creditNoteIdFor = (workspaceId: string, idempotencyKey: string) => nameUuid(`credit-note:${workspaceId}:${idempotencyKey}`);

/** Request ids are the service's lower-case uuids (any case finds them); anything else is no request. */
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The request's debit, read from its own stream, if it is a billed request of this workspace. */
async function requestCost(s: Pick<Services, 'store'>, workspaceId: string, requestId: string): Promise<NanoUsd> {
  if (!REQUEST_ID.test(requestId)) throw notFound(`No request ${requestId} in this workspace`);
  const events = await s.store.readStream(streams.inference(requestId));
  const mine = events.find(
    (e) =>
      (e.type === 'InferenceRequested' || e.type === 'TokensDebited') && (e.data as { workspaceId?: string }).workspaceId === workspaceId,
  );
  if (!mine) throw notFound(`No request ${requestId} in this workspace`);
  const debit = events.find((e) => e.type === 'TokensDebited') as EventRecord<TokensDebited> | undefined;
  if (!debit) throw conflict('The request has not been billed yet: issue the credit note once it has completed');
  return BigInt(debit.data.amountNanoUsd);
}

/**
 * An operator credits part or all of a request's cost: a `credit_note` grant on billing-{ws}. The
 * same Idempotency-Key again returns the same note (`replayed`); with another amount, request or
 * reason it is refused (409). The cap (the cost less earlier notes) is checked by the decider on the
 * stream's exact revision, so two notes sent at once cannot together pass it. Waits for the
 * projections, so the balance, the grants list and the ledger show it.
 */
export async function issueCreditNote(
  s: Deps,
  cmd: { workspaceId: string; requestId: string; idempotencyKey: string; amount: NanoUsd; reason: string; metadata: EventMetadata },
): Promise<{ note: CreditNoteRecord; replayed: boolean; cost: NanoUsd; credited: NanoUsd }> {
  const { workspaceId } = cmd;
  const requestId = cmd.requestId.toLowerCase();
  const cost = await requestCost(s, workspaceId, requestId);
  const creditNoteId = creditNoteIdFor(workspaceId, cmd.idempotencyKey);
  const decided = await decideBilling(
    s,
    workspaceId,
    {
      type: 'IssueCreditNote',
      data: { workspaceId, creditNoteId, requestId, requestCost: cost, amount: cmd.amount, reason: cmd.reason, by: 'operator' },
    },
    cmd.metadata,
  );
  await readYourWrites(s, decided.appended);
  return {
    note: decided.after.creditNotes.get(creditNoteId)!,
    replayed: decided.before.creditNotes.has(creditNoteId),
    cost,
    credited: creditedOf(decided.after, requestId),
  };
}

/** The credit notes issued against one request, oldest first (what its receipt shows). */
export async function creditNotesOf(s: Pick<Services, 'store'>, workspaceId: string, requestId: string): Promise<CreditNoteRecord[]> {
  const events = (await s.store.readStream(streams.billing(workspaceId))) as unknown as EventRecord<BillingEvent>[];
  const id = requestId.toLowerCase();
  return [...fold(events.filter((e) => e.type === 'CreditNoteIssued')).creditNotes.values()].filter((n) => n.requestId === id);
}
