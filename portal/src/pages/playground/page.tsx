import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, enc, errorText, get } from '../../api';
import type { CallUsage } from '../../api-types';
import { Invitations } from '../../components/invitations';
import { ErrorMessage, Field, Link, Message } from '../../components/ui';
import { USAGE_POLICY_PATH } from '../../policy';
import { listKeys, type ApiKey } from '../../resources';
import { secretFor, useSession, useWorkspace } from '../../state';
import { inferenceError, keyOfSecret, readEventStream } from './inference';
import { CallUsageView } from './call-usage';
import { DEFAULT_SETTINGS, SettingsCard, requestBody, type Turn } from './settings';

const val = (e: Event) => (e.target as HTMLInputElement).value;

export function PlaygroundPage() {
  const { me, setFlash } = useSession();
  return (
    <section aria-labelledby="pg-title">
      {me && me.invitations.length > 0 && <Invitations invitations={me.invitations} onAnswered={setFlash} />}
      <h1 id="pg-title">Playground</h1>
      <p class="lede">
        Try a key against the conversation endpoints. The reply streams in; the call's tokens and cost appear when it ends.
      </p>
      <p class="hint">
        Calls follow the <Link href={USAGE_POLICY_PATH}>usage policy</Link>: no personal or regulated information, and say that replies are
        generated.
      </p>
      <Playground />
    </section>
  );
}

function Playground() {
  const ws = useWorkspace();
  const { config: portalConfig } = useSession();
  const demo = portalConfig?.modelBackend === 'demo';
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [keysError, setKeysError] = useState<unknown>(null);
  const [keyId, setKeyId] = useState('');
  const [secret, setSecret] = useState('');
  const [settings, setSettings] = useState(DEFAULT_SETTINGS);
  // Web search is offered ticked only where a search backend answers (SEARXNG_URL).
  const searchConfigured = portalConfig?.webSearch ?? false;
  useEffect(() => setSettings((s) => ({ ...s, webSearch: searchConfigured })), [searchConfigured]);
  const { stream } = settings;
  const [message, setMessage] = useState('');
  const [turns, setTurns] = useState<Turn[]>([]);
  const [reply, setReply] = useState('');
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [usage, setUsage] = useState<CallUsage | null>(null);
  const [usageNote, setUsageNote] = useState<string | null>(null);
  const [switchedTo, setSwitchedTo] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);

  useEffect(() => {
    const ctl = new AbortController();
    listKeys(ws.workspaceId, ctl.signal).then(
      (list) => {
        const usable = list.filter((k) => !k.expired);
        setKeys(usable);
        // Prefer a key whose secret this page session still holds (one just created).
        const remembered = usable.find((k) => secretFor(k.keyId));
        const first = remembered ?? usable[0];
        if (first) {
          setKeyId(first.keyId);
          // Keep what the user may have pasted while the list loaded.
          setSecret((typed) => secretFor(first.keyId) ?? typed);
        }
      },
      (e) => !ctl.signal.aborted && setKeysError(e),
    );
    return () => {
      ctl.abort();
      abort.current?.abort();
    };
  }, [ws.workspaceId]);

  const chosen = keys?.find((k) => k.keyId === keyId) ?? null;
  const remembered = chosen ? secretFor(chosen.keyId) : undefined;
  const secretMismatch = Boolean(chosen && secret.trim() && keyOfSecret([chosen], secret) !== chosen);

  const pickKey = (id: string) => {
    setKeyId(id);
    setSecret(secretFor(id) ?? '');
    setSwitchedTo(null);
  };

  // A pasted secret decides the key: the picker follows it, so the key shown is the key billed.
  const pasteSecret = (value: string) => {
    setSecret(value);
    const owner = keys ? keyOfSecret(keys, value) : undefined;
    if (owner && owner.keyId !== keyId) {
      setKeyId(owner.keyId);
      setSwitchedTo(owner.name);
    } else if (!owner) setSwitchedTo(null);
  };

  const run = async (e: Event) => {
    e.preventDefault();
    if (!secret.trim()) {
      setError('Paste the secret of the chosen key: secrets are shown once, at creation, and the portal does not keep them.');
      return;
    }
    if (secretMismatch) {
      setError('The secret does not belong to the chosen key: paste the secret of that key, or choose its key.');
      return;
    }
    if (!message.trim()) {
      setError('Write a message to send.');
      return;
    }
    const body = requestBody(settings, turns, message.trim());
    const requestId = crypto.randomUUID();
    const ctl = new AbortController();
    abort.current = ctl;
    setRunning(true);
    setError(null);
    setReply('');
    setUsage(null);
    setUsageNote(null);
    let text = '';
    let servedId: string = requestId;
    try {
      const res = await fetch(stream ? '/external/api/inference/streaming' : '/external/api/inference', {
        method: 'POST',
        // The key travels only in this header; cookies are not sent to the inference API.
        headers: { Authorization: `Bearer ${secret.trim()}`, 'Content-Type': 'application/json', 'X-Request-Id': requestId },
        body: JSON.stringify(body),
        credentials: 'omit',
        cache: 'no-store',
        signal: ctl.signal,
      });
      servedId = res.headers.get('x-request-id') || requestId;
      if (!res.ok) {
        const data = await res.json().catch(() => null);
        throw new ApiError(res.status, data && typeof data === 'object' && 'detail' in data ? data.detail : null);
      }
      if (stream && res.body) {
        for await (const chunk of readEventStream(res.body)) {
          text += chunk;
          setReply(text);
        }
      } else {
        const data = (await res.json()) as { text?: string };
        text = data.text ?? '';
        setReply(text);
      }
      setTurns((t) => [...t, { type: 'Human', text: message.trim() }, { type: 'AI', text }]);
      setMessage('');
    } catch (err) {
      if ((err as Error).name === 'AbortError') setError('Stopped. The tokens generated so far are still billed.');
      else setError(err instanceof ApiError ? inferenceError(err) : errorText(err));
    } finally {
      setRunning(false);
      abort.current = null;
    }
    // The endpoints answer text only; the call's tokens and cost come from its TokensDebited event.
    try {
      const u = await get<CallUsage>(`/portal/workspaces/${enc(ws.workspaceId)}/requests/${enc(servedId)}`);
      setUsage(u);
    } catch (err) {
      if (text || (err instanceof ApiError && err.status !== 404))
        setUsageNote('The token count and cost of this call are not available yet: see the Usage page.');
    }
  };

  if (keysError) return <ErrorMessage error={keysError} />;
  if (keys && keys.length === 0) {
    return (
      <Message kind="info">
        This workspace has no API key yet. <Link href="/keys">Create a key</Link>{' '}
        {ws.role === 'admin' ? (
          <>
            (the workspace needs a payment method and a first deposit on the <Link href="/billing">Billing</Link> page)
          </>
        ) : (
          <>(once an admin of {ws.name} has added a payment method and the first deposit)</>
        )}
        , then come back.
      </Message>
    );
  }

  // The conversation lists every turn but the newest reply, which the Reply box shows (once).
  const last = turns[turns.length - 1];
  const shownTurns = reply && !running && last?.type === 'AI' && last.text === reply ? turns.slice(0, -1) : turns;

  return (
    <div class="playground">
      <form class="card pg-key" onSubmit={run} aria-labelledby="pg-key-title">
        <h2 id="pg-key-title">Key</h2>
        <Field label="API key">
          {(p) => (
            <select {...p} name="key" value={keyId} onChange={(e) => pickKey(val(e))} disabled={!keys}>
              {(keys ?? []).map((k) => (
                <option key={k.keyId} value={k.keyId}>
                  {k.name} ({k.prefix}…{k.last4})
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          label="Key secret"
          hint={
            switchedTo && !secretMismatch
              ? `This secret belongs to the key “${switchedTo}”: it is now the chosen key, and the one billed.`
              : remembered && secret === remembered
                ? 'Filled in from the key you just created. It stays in this page only and is forgotten on reload.'
                : 'Paste the secret shown when the key was created. It is kept in this page only, never stored.'
          }
          error={secretMismatch ? 'This secret does not belong to the chosen key.' : null}
        >
          {(p) => (
            <input
              {...p}
              name="secret"
              type="password"
              autocomplete="off"
              spellcheck={false}
              placeholder="tgk…"
              value={secret}
              onInput={(e) => pasteSecret(val(e))}
            />
          )}
        </Field>
      </form>

      <div class="card pg-chat">
        <h2>Conversation</h2>
        {shownTurns.length > 0 && (
          <ol class="turns" aria-label="Conversation so far">
            {shownTurns.map((t, i) => (
              <li key={i} class={`turn turn-${t.type.toLowerCase()}`}>
                <span class="turn-who">{t.type === 'Human' ? 'You' : 'Model'}</span>
                <p>{t.text}</p>
              </li>
            ))}
          </ol>
        )}
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void run(e);
          }}
        >
          <Field label="Your message">
            {(p) => (
              <textarea
                {...p}
                name="message"
                rows={3}
                value={message}
                onInput={(e) => setMessage(val(e))}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                    e.preventDefault();
                    void run(e);
                  }
                }}
              />
            )}
          </Field>
          <div class="actions">
            <button type="submit" class="button button-primary" disabled={running || !keys || secretMismatch}>
              {running ? 'Running…' : 'Run'}
            </button>
            {running && (
              <button type="button" class="button" onClick={() => abort.current?.abort()}>
                Stop
              </button>
            )}
            {turns.length > 0 && !running && (
              <button type="button" class="button button-quiet" onClick={() => (setTurns([]), setReply(''), setUsage(null))}>
                Clear conversation
              </button>
            )}
          </div>
          {secretMismatch && <p class="hint">Run is off until the secret matches the chosen key.</p>}
        </form>
        <h3 class="reply-title">Reply{demo && <span class="demo-label"> from the demo model</span>}</h3>
        <div class="reply" aria-live="polite" aria-busy={running} data-testid="reply">
          {reply || (running ? '…' : <span class="muted">The reply appears here.</span>)}
        </div>
        {error && <Message kind="error">{error}</Message>}
        <CallUsageView usage={usage} note={usageNote} />
      </div>

      <SettingsCard settings={settings} onChange={setSettings} demo={demo} onSubmit={run} />
    </div>
  );
}
