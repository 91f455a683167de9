import { useState } from 'preact/hooks';
import { del, enc, get, post, put } from '../../api';
import { useAction } from '../../action';
import { ConfirmDialog, CopyButton, ErrorMessage, Field, Loading, Message, useLoad } from '../../components/ui';
import { dateTime } from '../../format';
import { useWorkspace } from '../../state';
import type { WebhookEndpoint, WebhookEndpointWithSecret, WebhookList } from '../../api-types';
import { Deliveries } from './deliveries';
import { Replays } from './replays';

/** The page's address: /webhooks itself is the API's (Stripe's webhooks), never a portal page. */
export const WEBHOOKS_PATH = '/webhook-endpoints';

/** Webhooks (admins): endpoints, the secret shown once, the low-balance threshold, deliveries, resend, replay (docs/WEBHOOKS.md). */
export function WebhooksPage() {
  const ws = useWorkspace();
  const base = `/v1/workspaces/${enc(ws.workspaceId)}/webhooks`;
  const list = useLoad(
    (signal) => (ws.role === 'admin' ? get<WebhookList>(base, { signal }) : Promise.resolve(undefined)),
    [ws.workspaceId, ws.role],
  );
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);

  if (ws.role !== 'admin') {
    return (
      <section aria-labelledby="webhooks-title">
        <h1 id="webhooks-title">Webhooks</h1>
        <Message kind="info">Only admins of {ws.name} manage its webhooks.</Message>
      </section>
    );
  }
  const shown = (e: WebhookEndpointWithSecret) => setSecret({ url: e.url, secret: e.secret });
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <p class="lede">
        Signed POSTs (Standard Webhooks) to your URLs when things happen in <strong>{ws.name}</strong>. Verify each with the endpoint’s
        secret.
      </p>
      {secret && (
        <div class="card" role="region" aria-label="Signing secret">
          <Message kind="success">
            The signing secret of {secret.url}. It is shown only now: keep it where your receiver can read it.
          </Message>
          <p>
            <code data-testid="webhook-secret">{secret.secret}</code> <CopyButton text={secret.secret} />
          </p>
          <button type="button" class="button" onClick={() => setSecret(null)}>
            I have saved it
          </button>
        </div>
      )}
      {list.error ? <ErrorMessage error={list.error} /> : null}
      {!list.data ? (
        <Loading what="Loading the webhooks" />
      ) : (
        <>
          <AddEndpoint base={base} eventTypes={list.data.eventTypes} onAdded={(e) => (shown(e), list.reload())} />
          <Threshold base={base} current={list.data.balanceThreshold} onSaved={list.reload} />
          <h2>Endpoints</h2>
          {list.data.endpoints.length === 0 && <p>No endpoints yet.</p>}
          {list.data.endpoints.map((e) => (
            <EndpointCard key={e.endpointId} base={base} endpoint={e} onSecret={shown} onChanged={list.reload} />
          ))}
        </>
      )}
    </section>
  );
}

function AddEndpoint({
  base,
  eventTypes,
  onAdded,
}: {
  base: string;
  eventTypes: string[];
  onAdded: (e: WebhookEndpointWithSecret) => void;
}) {
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const add = useAction(async () => {
    const e = await post<WebhookEndpointWithSecret>(base, { url: url.trim(), eventTypes: types });
    setUrl('');
    setTypes([]);
    onAdded(e);
  });
  return (
    <form
      class="card"
      aria-label="Add an endpoint"
      onSubmit={(ev) => {
        ev.preventDefault();
        void add.run();
      }}
    >
      <h2>Add an endpoint</h2>
      <Field label="URL" hint="http(s); the service refuses private and loopback addresses unless its operator allows them">
        {(p) => <input {...p} name="url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />}
      </Field>
      <fieldset>
        <legend>Event types</legend>
        {eventTypes.map((t) => (
          <label key={t} class="check">
            <input
              type="checkbox"
              name="eventTypes"
              value={t}
              checked={types.includes(t)}
              onChange={(e) => setTypes((e.target as HTMLInputElement).checked ? [...types, t] : types.filter((x) => x !== t))}
            />{' '}
            {t}
          </label>
        ))}
      </fieldset>
      <ErrorMessage error={add.error} />
      <div class="actions">
        <button type="submit" class="button button-primary" disabled={add.busy || types.length === 0}>
          {add.busy ? 'Adding…' : 'Add endpoint'}
        </button>
      </div>
    </form>
  );
}

function Threshold({ base, current, onSaved }: { base: string; current: string | null; onSaved: () => void }) {
  const [value, setValue] = useState(current ?? '');
  const [saved, setSaved] = useState<string | null>(null);
  const save = useAction(async (threshold: string | null) => {
    const r = await put<{ threshold: string | null }>(`${base}/balance-threshold`, { threshold });
    setSaved(r.threshold === null ? 'The low-balance alert is off.' : `Alert when the balance falls below $${r.threshold}.`);
    onSaved();
  });
  return (
    <form
      class="card"
      aria-label="Low-balance alert"
      onSubmit={(ev) => {
        ev.preventDefault();
        void save.run(value.trim());
      }}
    >
      <h2>Low-balance alert</h2>
      <p>
        Endpoints subscribed to <code>balance.below_threshold</code> get one alert each time the balance falls below this amount; a deposit
        back above it re-arms the alert.
      </p>
      <Field label="Threshold (USD)" hint={current === null ? 'Off' : `Now $${current}`}>
        {(p) => (
          <input
            {...p}
            name="threshold"
            inputMode="decimal"
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <ErrorMessage error={save.error} />
      {saved && <Message kind="success">{saved}</Message>}
      <div class="actions">
        <button type="submit" class="button button-primary" disabled={save.busy}>
          Save threshold
        </button>
        {current !== null && (
          <button type="button" class="button" disabled={save.busy} onClick={() => (setValue(''), void save.run(null))}>
            Turn off
          </button>
        )}
      </div>
    </form>
  );
}

function EndpointCard({
  base,
  endpoint: e,
  onSecret,
  onChanged,
}: {
  base: string;
  endpoint: WebhookEndpoint;
  onSecret: (e: WebhookEndpointWithSecret) => void;
  onChanged: () => void;
}) {
  const path = `${base}/${enc(e.endpointId)}`;
  // Rotating and deleting break every receiver's verification at once: asked first, as deleting a key is.
  const [confirming, setConfirming] = useState<'rotate' | 'delete' | null>(null);
  const act = useAction(async (what: 'rotate' | 'enable' | 'delete') => {
    if (what === 'rotate') onSecret(await post<WebhookEndpointWithSecret>(`${path}/rotate-secret`));
    else if (what === 'enable') await post(`${path}/enable`);
    else await del(path);
    setConfirming(null);
    onChanged();
  });
  return (
    <article class="card" aria-label={`Endpoint ${e.url}`}>
      <h3>
        <code>{e.url}</code>
      </h3>
      <p>
        Status: <strong data-testid="endpoint-status">{e.status}</strong> · since {dateTime(e.created)} · {e.eventTypes.join(', ')}
      </p>
      {e.disabledReason && <Message kind="warning">Disabled: {e.disabledReason}</Message>}
      <ErrorMessage error={act.error} />
      <div class="actions">
        {e.status === 'disabled' && (
          <button type="button" class="button button-primary" disabled={act.busy} onClick={() => void act.run('enable')}>
            Enable again
          </button>
        )}
        <button type="button" class="button" disabled={act.busy} onClick={() => (act.setError(null), setConfirming('rotate'))}>
          Rotate secret
        </button>
        <button
          type="button"
          class="button button-danger"
          disabled={act.busy}
          onClick={() => (act.setError(null), setConfirming('delete'))}
        >
          Delete endpoint
        </button>
      </div>
      <ConfirmDialog
        open={confirming === 'rotate'}
        title="Rotate the signing secret?"
        confirmLabel="Rotate secret"
        onCancel={() => setConfirming(null)}
        onConfirm={() => void act.run('rotate')}
        busy={act.busy}
        error={act.error}
      >
        <p>
          A new secret signs every delivery to <code>{e.url}</code> from now on, and the current one stops working at once: your receiver
          rejects deliveries until it has the new secret.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirming === 'delete'}
        title="Delete this endpoint?"
        confirmLabel="Delete endpoint"
        onCancel={() => setConfirming(null)}
        onConfirm={() => void act.run('delete')}
        busy={act.busy}
        error={act.error}
      >
        <p>
          <code>{e.url}</code> gets no more deliveries, and its delivery log and replays go with it. This cannot be undone.
        </p>
      </ConfirmDialog>
      <Deliveries path={path} />
      {e.status === 'enabled' && <Replays path={path} />}
    </article>
  );
}
