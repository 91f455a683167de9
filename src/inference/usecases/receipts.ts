import { auditKeys } from '../../accounts';
import { creditNotesOf } from '../../billing';
import { formatUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import { Receipt, receiptOf } from '../receipt';
import { signReceipt } from '../receipt-signature';

/**
 * Request ids are the uuids the service gives (x-request-id), lower case; a uuid is the same id in
 * any case (RFC 9562), so one copied in upper case finds its receipt. Anything else is refused
 * before any read.
 */
export const REQUEST_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The receipt of one request, read from its stream, if it belongs to `owner` (a workspace, and a key
 * when the key itself asks); null for an unknown request or one of somebody else (the same 404, so
 * ids of other workspaces cannot be probed). The key's name and last four come from the audit read
 * model (kept for deleted keys too); null where it is not built.
 */
export async function readReceipt(s: Services, requestId: string, owner: { workspaceId: string; keyId?: string }): Promise<Receipt | null> {
  requestId = requestId.toLowerCase();
  if (!REQUEST_ID_PATTERN.test(requestId)) return null;
  const events = await s.store.readStream(streams.inference(requestId));
  const bare = receiptOf(events);
  if (!bare || bare.workspaceId !== owner.workspaceId || (owner.keyId !== undefined && bare.key.keyId !== owner.keyId)) return null;
  const names = await auditKeys(s.readModels, [bare.key.keyId]).catch(() => new Map<string, { name?: string; last4?: string }>());
  const receipt = receiptOf(events, names.get(bare.key.keyId))!;
  const notes = bare.status === 'completed' ? await creditNotesOf(s, owner.workspaceId, requestId) : [];
  return {
    ...receipt,
    creditNotes: notes.map((n) => ({ creditNoteId: n.creditNoteId, amount: formatUsd(n.amount), reason: n.reason, issuedAt: n.issuedAt })),
    credited: formatUsd(notes.reduce((sum, n) => sum + n.amount, 0n)),
    signature: signReceipt(receipt, s.signingKeys.current),
  };
}
