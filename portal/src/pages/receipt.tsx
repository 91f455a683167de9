import { useState } from 'preact/hooks';
import { enc, get } from '../api';
import type { RequestReceipt } from '../api-types';
import { ErrorMessage, Field, Link, Loading, Message, useLoad } from '../components/ui';
import { navigate } from '../router';
import { receiptRows } from './receipt-rows';
import { useWorkspace } from '../state';

/** Where a request's receipt is shown: /receipt?request=<x-request-id>. */
export const RECEIPT_PATH = '/receipt';
export const receiptHref = (requestId: string) => `${RECEIPT_PATH}?request=${enc(requestId)}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One inference request as billed (GET /v1/workspaces/:ws/requests/:id, read from its events). */
export function ReceiptPage() {
  const ws = useWorkspace();
  const requestId = new URLSearchParams(location.search).get('request') ?? '';
  const [typed, setTyped] = useState(requestId);
  const valid = UUID.test(requestId);
  const { data, error, loading } = useLoad(
    (signal) =>
      valid ? get<RequestReceipt>(`/v1/workspaces/${enc(ws.workspaceId)}/requests/${enc(requestId)}`, { signal }) : Promise.resolve(null),
    [ws.workspaceId, requestId],
  );
  return (
    <section class="receipt" aria-labelledby="receipt-page-title">
      <p>
        <Link href="/">← Back to the playground</Link>
      </p>
      <h1 id="receipt-page-title">Request receipt</h1>
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(receiptHref(typed.trim()));
        }}
      >
        <Field label="Request id" hint="The x-request-id header of an inference answer">
          {(p) => (
            <input {...p} name="request" value={typed} spellcheck={false} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
          )}
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
    </section>
  );
}

function ReceiptView({ r }: { r: RequestReceipt }) {
  const rows = receiptRows(r);
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
