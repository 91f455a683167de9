import { useState } from 'preact/hooks';
import '../policy.css';
import { enc, post } from '../api';
import { dateTime } from '../format';
import type { ApiKey, RolledKey } from '../api-types';
import { rememberSecret } from '../state';
import { CopyButton, Dialog, DialogActions } from './ui';
import { useAction } from '../action';

/** What POST /v1/workspaces/:ws/keys/:keyId/roll answers. */
export type { RolledKey } from '../api-types';

const GRACE_CHOICES = [
  { seconds: 0, label: 'At once (the key may have leaked)' },
  { seconds: 15 * 60, label: 'In 15 minutes' },
  { seconds: 3600, label: 'In 1 hour' },
  { seconds: 86_400, label: 'In 24 hours (the longest)' },
];

/**
 * "Roll key": a new secret for the same key (id, name, scopes, budget, rate limit, usage). The
 * old secret stops at once or after the chosen grace period; the new one is shown once.
 */
export function RollKeyDialog({
  workspaceId,
  apiKey,
  onClose,
  onRolled,
}: {
  workspaceId: string;
  apiKey: ApiKey | null;
  onClose: () => void;
  onRolled: (k: RolledKey) => void;
}) {
  const [grace, setGrace] = useState(0);
  const {
    run: roll,
    busy,
    error,
    setError,
  } = useAction(async () => {
    if (!apiKey) return;
    const k = await post<RolledKey>(`/v1/workspaces/${enc(workspaceId)}/keys/${enc(apiKey.keyId)}/roll`, { gracePeriodSeconds: grace });
    rememberSecret(k.keyId, k.secret);
    setGrace(0);
    onRolled(k);
  });
  const close = () => {
    setGrace(0);
    setError(null);
    onClose();
  };
  return (
    <Dialog open={apiKey !== null} title="Roll this key?" onClose={close}>
      <p>
        The key <strong>{apiKey?.name}</strong> gets a new secret. It keeps its name, scopes, budget, rate limit and usage history.
      </p>
      <fieldset class="roll-grace">
        <legend>The old secret stops working</legend>
        {GRACE_CHOICES.map((c) => (
          <div class="radio" key={c.seconds}>
            <input type="radio" id={`grace-${c.seconds}`} name="grace" checked={grace === c.seconds} onChange={() => setGrace(c.seconds)} />
            <label for={`grace-${c.seconds}`}>{c.label}</label>
          </div>
        ))}
      </fieldset>
      <DialogActions error={error} onCancel={close} onConfirm={roll} busy={busy} label="Roll key" busyLabel="Rolling…" danger />
    </Dialog>
  );
}

/** In the key list: while a rolled key's previous secret still works, say until when. */
export function RollNote({ apiKey }: { apiKey: ApiKey }) {
  const until = apiKey.lastRoll?.previousSecretValidUntil;
  if (!until || Date.parse(until) <= Date.now()) return null;
  return <span class="hint roll-note">previous secret works until {dateTime(until)}</span>;
}

/** The new secret, shown once after a roll. */
export function RolledSecret({ rolled, onDone }: { rolled: RolledKey; onDone: () => void }) {
  const atOnce = rolled.gracePeriodSeconds === 0;
  return (
    <div class="card secret-card rolled-secret" role="region" aria-labelledby="rolled-title">
      <h2 id="rolled-title">New secret for “{rolled.name ?? rolled.prefix}”</h2>
      <p>
        <strong>Copy it now: it is shown only once.</strong>{' '}
        {atOnce
          ? 'The old secret has stopped working.'
          : `The old secret works until ${dateTime(rolled.previousSecretValidUntil)}; update your clients before then.`}
      </p>
      <div class="secret-row">
        <label for="rolled-secret" class="visually-hidden">
          New secret of the key {rolled.name}
        </label>
        <input
          id="rolled-secret"
          class="secret"
          readOnly
          value={rolled.secret}
          spellcheck={false}
          autocomplete="off"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <CopyButton text={rolled.secret} label="Copy secret" />
      </div>
      <div class="actions">
        <button type="button" class="button button-quiet" onClick={onDone}>
          Done, hide the secret
        </button>
      </div>
    </div>
  );
}
