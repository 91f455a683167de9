import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, get } from '../../api';
import type { Billing } from '../../api-types';
import { ErrorMessage, Loading, Message, useLoad } from '../../components/ui';
import { useSession, useWorkspace } from '../../state';
import { AutoReload } from './auto-reload';
import { BalanceSummary } from './balance';
import type { Actions } from './card-messages';
import { Deposit } from './deposit';
import { Grants } from './grants';
import { Ledger } from './ledger';
import { Statements } from './statements';
import { PaymentMethod } from './payment-method';

export const loadBilling = (ws: string, signal?: AbortSignal) => get<Billing>(`/v1/workspaces/${enc(ws)}/billing`, { signal });

export function BillingPage() {
  const ws = useWorkspace();
  const { me, refresh } = useSession();
  const isAdmin = ws.role === 'admin';
  const billing = useLoad((signal) => loadBilling(ws.workspaceId, signal), [ws.workspaceId]);
  // Notices (a suspended auto-reload, …) live in /v1/me: read them afresh with the page.
  useEffect(() => {
    void refresh();
  }, [refresh]);
  const [ledgerTick, setLedgerTick] = useState(0);
  const changed = async () => {
    await billing.reload();
    setLedgerTick((t) => t + 1);
    void refresh();
  };
  // Each action clears the messages the other cards still show from before.
  const [actionSeq, setActionSeq] = useState(0);
  const seqRef = useRef(0);
  const actions: Actions = { seq: actionSeq, begin: () => (setActionSeq(++seqRef.current), seqRef.current) };
  const b = billing.data;
  const notices = (me?.notices ?? []).filter((n) => n.workspaceId === ws.workspaceId);

  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Billing</h1>
      <p class="lede">
        Prepaid credit for the workspace <strong>{ws.name}</strong>. Requests are billed per token from this balance.
      </p>
      {notices.map((n) => (
        <Message key={n.id} kind="warning">
          <span data-testid="notice">{n.message}</span>
        </Message>
      ))}
      {billing.loading && !b ? (
        <Loading what="Loading billing" />
      ) : billing.error ? (
        <ErrorMessage error={billing.error} />
      ) : b ? (
        <>
          <BalanceSummary billing={b} isAdmin={isAdmin} />
          <div class="grid-2 cards billing-cards">
            <PaymentMethod billing={b} isAdmin={isAdmin} onChanged={changed} actions={actions} />
            <Deposit billing={b} isAdmin={isAdmin} onChanged={changed} actions={actions} />
          </div>
          <AutoReload billing={b} isAdmin={isAdmin} onChanged={changed} actions={actions} />
          <Grants tick={ledgerTick} />
          <Statements tick={ledgerTick} />
          <Ledger tick={ledgerTick} />
        </>
      ) : null}
    </section>
  );
}
