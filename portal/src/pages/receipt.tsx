import { useState } from 'preact/hooks';
import { enc, get } from '../api';
import type { RequestReceipt } from '../api-types';
import { ErrorMessage, Field, Loading, Message, useLoad } from '../components/ui';
import { dateTime, integer, usd } from '../format';
import { navigate } from '../router';
import { useWorkspace } from '../state';

/** Where a request's receipt is shown: /receipt?request=<x-request-id>. */
export const RECEIPT_PATH = '/receipt';
export const receiptHref = (requestId: string) => `${RECEIPT_PATH}?request=${enc(requestId)}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** One inference request as billed (GET /v1/workspaces/:ws/requests/:id, read from its events). */
export function ReceiptPage() {
  const ws = useWorkspace();
  const requestId = new URLSearchParams(location.search).get('request') ?? '';
  const [typed, setTyped] = useState(requestId);
  const valid = UUID.test(requestId);
  const { data, error, loading } = useLoad(
    (signal) => (valid ? get<RequestReceipt>(`/v1/workspaces/${enc(ws.workspaceId)}/requests/${enc(requestId)}`, { signal }) : Promise.resolve(null)),
    [ws.workspaceId, requestId],
  );
  return (
    <div class="receipt">
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(receiptHref(typed.trim()));
        }}
      >
        <Field label="Request id" hint="The x-request-id header of an inference answer">
          {(p) => <input {...p} name="request" value={typed} spellcheck={false} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />}
        </Field>
        <div class="actions">
          <button type="submit" class="button button-primary">
            Show receipt
          </button>
        </div>
      </form>
      {requestId && !valid && <Message>That is not a request id (a uuid such as the x-request-id of an answer).</Message>}
      {valid && loading && <Loading what="Loading the receipt" />}
      {valid && !loading && error ? <ErrorMessage error={error} /> : null}
      {data && <ReceiptView r={data} />}
    </div>
  );
}

function ReceiptView({ r }: { r: RequestReceipt }) {
  const rows: Array<[string, string]> = [
    ['Request', r.requestId],
    ['Key', `${r.key.name ?? 'deleted key'}${r.key.last4 ? ` (…${r.key.last4})` : ''}`],
    ['Config', r.config],
    ['Endpoint', r.endpoint],
    ['Status', r.status === 'open' ? 'running' : (r.finishReason ?? 'completed')],
    ['Prompt tokens billed', r.inputTokens === null ? '—' : integer(r.inputTokens)],
    ['Output tokens billed', r.outputTokens === null ? '—' : `${integer(r.outputTokens)} of at most ${integer(r.maxTokens)}`],
    ['Price per input token', r.prices ? usd(r.prices.inputUsdPerToken) : '—'],
    ['Price per output token', r.prices ? usd(r.prices.outputUsdPerToken) : '—'],
    ['Cost', r.cost === null ? '—' : usd(r.cost, { minDecimals: 2 })],
    ['Held before generating', usd(r.hold.reserved, { minDecimals: 2 })],
    ['Hold released', r.hold.released === null ? 'not yet' : usd(r.hold.released, { minDecimals: 2 })],
    ['Requested', dateTime(r.requestedAt)],
    ['Completed', r.completedAt ? `${dateTime(r.completedAt)}${r.durationMs !== null ? ` (${integer(r.durationMs)} ms)` : ''}` : '—'],
    ['Ledger position of the debit', r.debit ? r.debit.position : '—'],
  ];
  return (
    <section class="card" aria-labelledby="receipt-title" data-testid="receipt">
      <h2 id="receipt-title">Receipt</h2>
      <dl class="receipt-dl">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
