import { useEffect, useState } from 'preact/hooks';
import { enc, get } from '../../api';
import type { Statement, StatementMonths } from '../../api-types';
import { ErrorMessage, Field, Loading, useLoad } from '../../components/ui';
import { dateTime, integer, usd } from '../../format';
import { useWorkspace } from '../../state';

/**
 * Monthly statements (UTC calendar months): pick a month, read its opening balance, deposits and
 * reloads (each deposit with its receipt), usage per key and config and closing balance; download
 * it as CSV or PDF. Everything comes from GET …/statements and …/statements/:month.
 */
export function Statements({ tick }: { tick: number }) {
  const ws = useWorkspace();
  const base = `/v1/workspaces/${enc(ws.workspaceId)}`;
  const months = useLoad((signal) => get<StatementMonths>(`${base}/statements`, { signal }), [ws.workspaceId]);
  const [month, setMonth] = useState<string | null>(null);
  useEffect(() => setMonth(null), [ws.workspaceId]);
  const chosen = month ?? months.data?.months[0]?.month ?? null;
  const statement = useLoad(
    (signal) => (chosen ? get<Statement>(`${base}/statements/${chosen}`, { signal }) : Promise.resolve(null)),
    [ws.workspaceId, chosen, tick],
  );
  const st = statement.data;
  return (
    <div class="card" data-testid="statements">
      <h2>Monthly statements</h2>
      {months.error ? (
        <ErrorMessage error={months.error} />
      ) : !months.data ? (
        <Loading what="Loading statements" />
      ) : (
        <>
          <div class="usage-controls">
            <Field label="Month (UTC)">
              {(p) => (
                <select {...p} name="month" value={chosen ?? ''} onChange={(e) => setMonth((e.target as HTMLSelectElement).value)}>
                  {months.data!.months.map((m) => (
                    <option value={m.month}>
                      {m.month}
                      {m.complete ? '' : ' (so far)'}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            {chosen && (
              <>
                <a class="button" href={`${base}/statements/${chosen}?format=pdf`} download>
                  Download statement PDF
                </a>
                <a class="button" href={`${base}/statements/${chosen}?format=csv`} download>
                  Download statement CSV
                </a>
              </>
            )}
          </div>
          {statement.error ? (
            <ErrorMessage error={statement.error} />
          ) : !st ? (
            <Loading what="Loading the statement" />
          ) : (
            <div class="table-wrap">
              {/* table-stack: one card per line on a phone, the amount labelled, nothing hidden in a scroll box. */}
              <table class="table table-stack" aria-label={`Statement ${st.month}`}>
                <tbody>
                  <tr>
                    <th scope="row">Opening balance</th>
                    <td />
                    <td class="num" data-label="Amount" data-testid="statement-opening">
                      {usd(st.openingBalance, { maxDecimals: 9 })}
                    </td>
                  </tr>
                  {st.credits.map((c) => (
                    <tr key={c.reference}>
                      <th scope="row">{c.kind === 'deposit' ? 'Deposit' : c.kind === 'reload' ? 'Auto-reload' : 'Credit grant'}</th>
                      <td data-label="Details">
                        {dateTime(c.at)} · {c.paymentReference ?? c.reference}
                        {c.kind === 'deposit' && (
                          <>
                            {' · '}
                            <a href={`${base}/billing/deposits/${enc(c.reference)}/receipt?format=pdf`} download>
                              Receipt (PDF)
                            </a>
                          </>
                        )}
                      </td>
                      <td class="num" data-label="Amount">
                        +{usd(c.amount, { maxDecimals: 9 })}
                      </td>
                    </tr>
                  ))}
                  {st.expiries.map((e) => (
                    <tr key={`expiry-${e.reference}`}>
                      <th scope="row">Credit expired</th>
                      <td data-label="Details">
                        {dateTime(e.at)} · {e.reference}
                      </td>
                      <td class="num" data-label="Amount">
                        −{usd(e.amount, { maxDecimals: 9 })}
                      </td>
                    </tr>
                  ))}
                  {st.usage.map((u) => (
                    <tr key={`${u.keyId}-${u.config}`}>
                      <th scope="row">Usage</th>
                      <td data-label="Details">
                        key {u.keyName ?? u.keyId.slice(0, 8)} · {u.config} · {integer(u.requests)}{' '}
                        {u.requests === 1 ? 'request' : 'requests'} · {integer(u.inputTokens)} in / {integer(u.outputTokens)} out
                      </td>
                      <td class="num" data-label="Amount">
                        −{usd(u.cost, { maxDecimals: 9 })}
                      </td>
                    </tr>
                  ))}
                  <tr>
                    <th scope="row">Closing balance</th>
                    <td class="muted" data-label="Details">
                      opening + {usd(st.totals.credits, { maxDecimals: 9 })} credits − {usd(st.totals.debits, { maxDecimals: 9 })} usage and
                      expiries
                    </td>
                    <td class="num" data-label="Amount" data-testid="statement-closing">
                      {usd(st.closingBalance, { maxDecimals: 9 })}
                    </td>
                  </tr>
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </div>
  );
}
