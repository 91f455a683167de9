import { enc, get } from '../../api';
import type { CreditGrant } from '../../api-types';
import { ErrorMessage, Loading, useLoad } from '../../components/ui';
import { dateTime, usd } from '../../format';
import { useWorkspace } from '../../state';

const STATUS: Record<CreditGrant['status'], string> = { active: 'Active', used: 'Used up', expired: 'Expired' };

/**
 * The workspace's credit grants (GET …/billing/credit-grants): every deposit and reload (paid, never
 * expires) and the promotional credit operators granted, with what each has left and when it
 * expires. Debits draw by priority, then soonest expiry, then oldest (docs/BILLING.md).
 */
export function Grants({ tick }: { tick: number }) {
  const ws = useWorkspace();
  const grants = useLoad(
    (signal) => get<{ grants: CreditGrant[] }>(`/v1/workspaces/${enc(ws.workspaceId)}/billing/credit-grants`, { signal }),
    [ws.workspaceId, tick],
  );
  return (
    <div class="card" data-testid="credit-grants">
      <h2>Credit grants</h2>
      <p class="muted">Requests draw promotional credit before paid credit, the credit that expires soonest first.</p>
      {grants.error ? (
        <ErrorMessage error={grants.error} />
      ) : !grants.data ? (
        <Loading what="Loading credit grants" />
      ) : (
        <div class="table-wrap">
          <table class="table table-stack" aria-label="Credit grants">
            <thead>
              <tr>
                <th scope="col">Credit</th>
                <th scope="col">Granted</th>
                <th scope="col">Left</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {grants.data.grants.map((g) => (
                <tr key={g.grantId} data-testid="credit-grant">
                  <th scope="row">
                    {g.source === 'deposit' ? 'Deposit' : g.source === 'reload' ? 'Auto-reload' : 'Promotional credit'}
                    {g.note ? ` · ${g.note}` : ''}
                  </th>
                  <td class="num" data-label="Granted">
                    {usd(g.amount, { maxDecimals: 9 })}
                  </td>
                  <td class="num" data-label="Left">
                    {usd(g.remaining, { maxDecimals: 9 })}
                  </td>
                  <td data-label="Expires">{g.expiresAt ? dateTime(g.expiresAt) : 'Never'}</td>
                  <td data-label="Status">
                    {STATUS[g.status]}
                    {g.expired && g.expired !== '0' ? ` (${usd(g.expired, { maxDecimals: 9 })} expired)` : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
