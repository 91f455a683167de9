import { useState } from 'preact/hooks';
import { get, enc, post } from '../../api';
import { useAction } from '../../action';
import { ErrorMessage, Message, useLoad } from '../../components/ui';
import { dateTime } from '../../format';
import type { WebhookDelivery } from '../../api-types';

/** An endpoint's latest deliveries with each attempt, loaded when opened; Resend sends one again. */
export function Deliveries({ path }: { path: string }) {
  const [open, setOpen] = useState(false);
  const list = useLoad(
    (signal) => (open ? get<{ deliveries: WebhookDelivery[] }>(`${path}/deliveries`, { signal }) : Promise.resolve(undefined)),
    [path, open],
  );
  const [queued, setQueued] = useState<string | null>(null);
  const resend = useAction(async (id: string) => {
    await post(`${path}/deliveries/${enc(id)}/resend`);
    setQueued(id);
    await list.reload();
  });
  return (
    <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Deliveries</summary>
      <ErrorMessage error={list.error ?? resend.error} />
      {queued && <Message kind="success">Resend of {queued} queued.</Message>}
      {list.data && list.data.deliveries.length === 0 && <p>Nothing delivered yet.</p>}
      {list.data && list.data.deliveries.length > 0 && (
        <div class="table-wrap">
          <table class="table table-stack" aria-label="Deliveries, newest first">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">webhook-id</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.deliveries.map((d) => (
                <tr key={d.deliveryId}>
                  <td data-label="Event">{d.eventType}</td>
                  <td data-label="webhook-id">
                    <code>{d.deliveryId}</code>
                  </td>
                  <td data-label="Status" data-testid="delivery-status">
                    {d.status}
                  </td>
                  <td data-label="Attempts">
                    {d.attempts.length === 0
                      ? 'none yet'
                      : d.attempts.map((a, i) => (
                          <div key={i}>
                            {dateTime(a.at)}: {a.status ?? 'no answer'}
                            {a.error ? ` (${a.error})` : ''}
                          </div>
                        ))}
                  </td>
                  <td class="row-actions">
                    <button type="button" class="button" disabled={resend.busy} onClick={() => void resend.run(d.deliveryId)}>
                      Resend
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <button type="button" class="button" onClick={() => void list.reload()}>
        Refresh deliveries
      </button>
    </details>
  );
}
