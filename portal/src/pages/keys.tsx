import { useRef, useState } from 'preact/hooks';
import { ApiError, del, enc, post } from '../api';
import { ConfirmDialog, CopyButton, ErrorMessage, Field, Link, Loading, Message, useLoad } from '../components/ui';
import { dateTime } from '../format';
import { forgetSecret, rememberSecret, useSession, useWorkspace } from '../state';
import { KEY_NAME_MAX, KEY_NAME_MIN, listKeys, type ApiKey } from '../resources';
import type { CreatedKey } from '../api-types';
import { KeyEditDialog, KeySpend } from './key-budget';
import { RollKeyDialog, RollNote, RolledSecret, type RolledKey } from '../components/roll-key';
import { KeyReminder, PolicyNotice, PolicyRequired } from '../policy';
import { useAction } from '../action';

export function KeysPage() {
  const ws = useWorkspace();
  const { me } = useSession();
  const keys = useLoad((signal) => listKeys(ws.workspaceId, signal), [ws.workspaceId]);
  const [name, setName] = useState('');
  const [nameError, setNameError] = useState<string | null>(null);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [toDelete, setToDelete] = useState<ApiKey | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const outcomeRef = useRef<HTMLDivElement>(null);
  const [toEdit, setToEdit] = useState<ApiKey | null>(null);
  const [toRoll, setToRoll] = useState<ApiKey | null>(null);
  const [rolled, setRolled] = useState<RolledKey | null>(null);

  const create = async (e: Event) => {
    e.preventDefault();
    const n = name.trim();
    if (n.length < KEY_NAME_MIN || n.length > KEY_NAME_MAX) {
      setNameError(`A key name must be ${KEY_NAME_MIN} to ${KEY_NAME_MAX} characters long.`);
      return;
    }
    setNameError(null);
    await createKey(n);
  };
  const {
    run: createKey,
    busy: creating,
    error: createError,
  } = useAction(async (n: string) => {
    setOutcome(null);
    const k = await post<CreatedKey>(`/v1/workspaces/${enc(ws.workspaceId)}/keys`, { name: n });
    // Kept in memory for the playground of this page session only.
    rememberSecret(k.keyId, k.secret);
    setCreated(k);
    setName('');
    await keys.reload();
  });

  const {
    run: confirmDelete,
    busy: deleting,
    error: deleteError,
    setError: setDeleteError,
  } = useAction(async () => {
    if (!toDelete) return;
    await del(`/v1/workspaces/${enc(ws.workspaceId)}/keys/${enc(toDelete.keyId)}`);
    forgetSecret(toDelete.keyId);
    if (created?.keyId === toDelete.keyId) setCreated(null);
    setOutcome(`The key “${toDelete.name}” was deleted. Requests with it now fail with 401.`);
    setToDelete(null);
    await keys.reload();
    // The dialog's button is gone: keyboard users continue from the message, not the page body.
    outcomeRef.current?.focus();
  });

  const notFunded = createError instanceof ApiError && createError.status === 402;
  const policyNotAccepted = createError instanceof ApiError && createError.status === 403 && /usage policy/.test(createError.message);

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <p class="lede">
        Keys of the workspace <strong>{ws.name}</strong>, shared by its members. Send one as <code>Authorization: Bearer &lt;key&gt;</code>.
      </p>

      <div class="card">
        <h2>Create an API key</h2>
        <form onSubmit={create} class="inline-form" noValidate>
          <Field label="Key name" hint={`At least ${KEY_NAME_MIN} characters, e.g. “support bot”.`} error={nameError}>
            {(p) => (
              <input
                {...p}
                name="keyName"
                value={name}
                maxLength={KEY_NAME_MAX}
                onInput={(e) => setName((e.target as HTMLInputElement).value)}
              />
            )}
          </Field>
          <button type="submit" class="button button-primary" disabled={creating}>
            {creating ? 'Creating…' : 'Create API key'}
          </button>
          <KeyReminder />
        </form>
        {policyNotAccepted ? (
          <PolicyRequired message={(createError as ApiError).message} />
        ) : notFunded ? (
          <Message kind="warning">
            {(createError as ApiError).message}{' '}
            {ws.role === 'admin' ? (
              <>
                <Link href="/billing">Go to Billing</Link> to add a payment method and the first deposit.
              </>
            ) : (
              <>Only an admin of {ws.name} can add the payment method and the first deposit: ask one of them.</>
            )}
          </Message>
        ) : (
          <ErrorMessage error={createError} />
        )}
        {!createError && <PolicyNotice />}
      </div>

      {created && (
        <div class="card secret-card" role="region" aria-labelledby="secret-title">
          <h2 id="secret-title">Your new key “{created.name}”</h2>
          <p>
            <strong>Copy the secret now: it is shown only once.</strong> The portal does not store it; this page keeps it in memory for the{' '}
            <Link href="/">playground</Link> until you reload.
          </p>
          <div class="secret-row">
            <label for="new-secret" class="visually-hidden">
              Secret of the key {created.name}
            </label>
            <input
              id="new-secret"
              class="secret"
              readOnly
              value={created.secret}
              spellcheck={false}
              autocomplete="off"
              onFocus={(e) => (e.target as HTMLInputElement).select()}
            />
            <CopyButton text={created.secret} label="Copy secret" />
          </div>
          <div class="actions">
            <Link href="/" class="button">
              Try it in the playground
            </Link>
            <button type="button" class="button button-quiet" onClick={() => setCreated(null)}>
              Done, hide the secret
            </button>
          </div>
        </div>
      )}

      {rolled && <RolledSecret rolled={rolled} onDone={() => setRolled(null)} />}

      <div ref={outcomeRef} tabIndex={-1} class="focus-target">
        {outcome && <Message kind="success">{outcome}</Message>}
      </div>

      <div class="card">
        <h2>Keys</h2>
        {keys.loading && !keys.data ? (
          <Loading what="Loading keys" />
        ) : keys.error ? (
          <ErrorMessage error={keys.error} />
        ) : keys.data && keys.data.length === 0 ? (
          <p class="muted">No keys yet.</p>
        ) : (
          <div class="table-wrap">
            <table class="table table-stack" aria-label="API keys">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Created by</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Expires</th>
                  <th scope="col">This month</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {(keys.data ?? []).map((k) => (
                  <tr key={k.keyId} data-testid="key-row">
                    <th scope="row">{k.name}</th>
                    <td data-label="Key">
                      <code>
                        {k.prefix}…{k.last4}
                      </code>
                      <RollNote apiKey={k} />
                    </td>
                    <td data-label="Created">{dateTime(k.created)}</td>
                    <td data-label="Created by">{k.createdBy?.name ?? '—'}</td>
                    <td data-label="Last used">{k.lastUsed ? dateTime(k.lastUsed) : 'never'}</td>
                    <td data-label="Expires">{k.expiresAt ? `${dateTime(k.expiresAt)}${k.expired ? ' (expired)' : ''}` : 'never'}</td>
                    <td data-label="This month">
                      <KeySpend k={k} />
                    </td>
                    <td class="row-actions">
                      <button type="button" class="button" onClick={() => setToEdit(k)}>
                        Edit<span class="visually-hidden"> the key {k.name}</span>
                      </button>
                      {/* Only its creator or an admin may roll or delete a key (the API answers 403 otherwise). */}
                      {(ws.role === 'admin' || k.createdBy?.userId === me?.user.userId) && (
                        <>
                          <button type="button" class="button button-quiet" onClick={() => setToRoll(k)}>
                            Roll key<span class="visually-hidden"> {k.name}</span>
                          </button>
                          <button type="button" class="button button-danger-quiet" onClick={() => (setDeleteError(null), setToDelete(k))}>
                            Delete<span class="visually-hidden"> the key {k.name}</span>
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>

      <KeyEditDialog
        workspaceId={ws.workspaceId}
        k={toEdit}
        onClose={() => setToEdit(null)}
        onSaved={async (message) => {
          setToEdit(null);
          setOutcome(message);
          await keys.reload();
          outcomeRef.current?.focus();
        }}
      />

      <RollKeyDialog
        workspaceId={ws.workspaceId}
        apiKey={toRoll}
        onClose={() => setToRoll(null)}
        onRolled={(k) => {
          setToRoll(null);
          setCreated(null);
          setRolled(k);
          void keys.reload();
        }}
      />

      <ConfirmDialog
        open={toDelete !== null}
        title="Delete this key?"
        confirmLabel="Delete key"
        onCancel={() => setToDelete(null)}
        onConfirm={confirmDelete}
        busy={deleting}
        error={deleteError}
      >
        <p>
          The key <strong>{toDelete?.name}</strong> (
          <code>
            {toDelete?.prefix}…{toDelete?.last4}
          </code>
          ) stops working at once. Programs using it will get 401. This cannot be undone.
        </p>
      </ConfirmDialog>
    </section>
  );
}
