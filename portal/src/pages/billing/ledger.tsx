import { useState } from 'preact/hooks';
import { enc, get } from '../../api';
import type { LedgerEntry, LedgerPage } from '../../api-types';
import { ErrorMessage, Loading, useLoad } from '../../components/ui';
import { dateTime, integer, usd } from '../../format';
import { listKeys, type ApiKey } from '../../resources';
import { useWorkspace } from '../../state';

const LEDGER_PAGE = 50;

/** The ledger, newest first: the API pages oldest first, so the portal reads from the end. */
export function Ledger({ tick }: { tick: number }) {
  const ws = useWorkspace();
  const [pages, setPages] = useState(1);
  const keys = useLoad((signal) => listKeys(ws.workspaceId, signal).catch(() => [] as ApiKey[]), [ws.workspaceId, tick]);
  const ledger = useLoad(
    async (signal) => {
      const base = `/v1/workspaces/${enc(ws.workspaceId)}/billing/ledger`;
      const head = await get<LedgerPage>(`${base}?limit=1`, { signal });
      const want = LEDGER_PAGE * pages;
      const from = Math.max(0, head.total - want);
      const rows: LedgerEntry[] = [];
      let cursor: string | null = String(from);
      while (cursor !== null && rows.length < want) {
        const page: LedgerPage = await get<LedgerPage>(`${base}?limit=${Math.min(500, want - rows.length)}&cursor=${cursor}`, { signal });
        rows.push(...page.entries);
        cursor = page.nextCursor;
      }
      return { rows: rows.reverse(), total: head.total, more: from > 0 };
    },
    [ws.workspaceId, tick, pages],
  );
  const keyName = new Map((keys.data ?? []).map((k) => [k.keyId, k.name]));
  const describe = (r: LedgerEntry) => {
    switch (r.type) {
      case 'DepositSucceeded':
        return 'Deposit';
      case 'AutoReloadSucceeded':
        return 'Auto-reload';
      case 'TokensDebited':
        return `Request · ${r.model ?? ''} · ${integer(r.inputTokens ?? 0)} in / ${integer(r.outputTokens ?? 0)} out · key ${
          (r.keyId && keyName.get(r.keyId)) ?? 'deleted'
        }`;
      default:
        return r.type;
    }
  };
  const data = ledger.data;
  return (
    <div class="card">
      <h2>Ledger</h2>
      {ledger.loading && !data ? (
        <Loading what="Loading the ledger" />
      ) : ledger.error ? (
        <ErrorMessage error={ledger.error} />
      ) : !data || data.rows.length === 0 ? (
        <p class="muted">No money has moved yet.</p>
      ) : (
        <>
          <p class="muted">
            {data.total} {data.total === 1 ? 'entry' : 'entries'}, newest first.
          </p>
          <div class="table-wrap">
            <table class="table table-stack" aria-label="Ledger, newest first">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Entry</th>
                  <th scope="col" class="num">
                    Amount
                  </th>
                  <th scope="col" class="num">
                    Balance after
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.rows.map((r) => (
                  <tr key={r.position} data-testid="ledger-row">
                    <td>{dateTime(r.at)}</td>
                    <td data-label="Entry">{describe(r)}</td>
                    <td class="num" data-label="Amount">
                      {usd(r.amount, { maxDecimals: 9 })}
                    </td>
                    <td class="num" data-label="Balance after">
                      {usd(r.balance, { maxDecimals: 9 })}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {data.more && (
            <div class="actions">
              <button type="button" class="button" onClick={() => setPages((p) => p + 1)}>
                Show older entries
              </button>
            </div>
          )}
        </>
      )}
    </div>
  );
}
