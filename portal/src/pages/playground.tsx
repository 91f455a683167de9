import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, describeDetail, enc, errorText, get, post } from '../api';
import { ErrorMessage, Field, Link, Message } from '../components/ui';
import { integer, usd } from '../format';
import type { Invitation } from '../model';
import { listKeys, type ApiKey } from '../resources';
import { secretFor, useSession, useWorkspace } from '../state';
import { USAGE_POLICY_PATH } from '../policy';
import { DEFAULT_MODEL, MODEL_CONFIGS, MODEL_SUMMARIES } from '../../../src/domain/inference/models';

const MODELS = MODEL_CONFIGS.map((value) => ({ value, label: `${value} — ${MODEL_SUMMARIES[value]}` }));

/** The key a pasted secret belongs to, by its visible prefix and last four characters. */
export function keyOfSecret(keys: ApiKey[], secret: string): ApiKey | undefined {
  const s = secret.trim();
  return keys.find((k) => s.startsWith(k.prefix) && s.endsWith(k.last4));
}

interface Turn {
  type: 'Human' | 'AI';
  text: string;
}

interface CallUsage {
  requestId: string;
  inputTokens: number;
  outputTokens: number;
  cost: string;
}

const val = (e: Event) => (e.target as HTMLInputElement).value;

export function PlaygroundPage() {
  const { me, setFlash } = useSession();
  return (
    <section aria-labelledby="pg-title">
      {me && me.invitations.length > 0 && <Invitations invitations={me.invitations} onAnswered={setFlash} />}
      <h1 id="pg-title">Playground</h1>
      <p class="lede">Try a key against the conversation endpoints. The reply streams in; the call's tokens and cost appear when it ends.</p>
      <p class="hint">
        Calls follow the <Link href={USAGE_POLICY_PATH}>usage policy</Link>: no personal or regulated information, and say that replies are generated.
      </p>
      <Playground />
    </section>
  );
}

/** Pending invitations, at the top of the playground page (the spec's place for them). */
function Invitations({ invitations, onAnswered }: { invitations: Invitation[]; onAnswered: (message: string) => void }) {
  const { refresh, selectWorkspace } = useSession();
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const act = async (inv: Invitation, action: 'accept' | 'decline') => {
    setBusy(inv.invitationId);
    setError(null);
    try {
      await post(`/v1/invitations/${enc(inv.invitationId)}/${action}`);
      onAnswered(
        action === 'accept'
          ? `You joined ${inv.workspaceName}: its keys and billing are now shared with you.`
          : `You declined the invitation to ${inv.workspaceName}.`,
      );
      await refresh();
      if (action === 'accept') selectWorkspace(inv.workspaceId);
    } catch (err) {
      // Revoked or answered elsewhere (409): say so above the page, and re-read the list.
      if (err instanceof ApiError && err.status === 409) {
        onAnswered(`The invitation to ${inv.workspaceName} is no longer open: ${err.message}.`);
        await refresh();
      } else setError(err);
    } finally {
      setBusy(null);
    }
  };
  return (
    <section class="card invitations" aria-labelledby="inv-title">
      <h2 id="inv-title">Pending invitations</h2>
      <ul class="plain-list">
        {invitations.map((inv) => (
          <li key={inv.invitationId} class="invitation" data-testid="invitation">
            <p>
              <strong>{inv.invitedBy || 'An admin'}</strong> invited you to the workspace <strong>{inv.workspaceName}</strong>.
            </p>
            <div class="actions">
              <button type="button" class="button button-primary" disabled={busy !== null} onClick={() => act(inv, 'accept')}>
                Accept<span class="visually-hidden"> the invitation to {inv.workspaceName}</span>
              </button>
              <button type="button" class="button" disabled={busy !== null} onClick={() => act(inv, 'decline')}>
                Decline<span class="visually-hidden"> the invitation to {inv.workspaceName}</span>
              </button>
            </div>
          </li>
        ))}
      </ul>
      <ErrorMessage error={error} />
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
  const [config, setConfig] = useState<string>(DEFAULT_MODEL);
  const [temperature, setTemperature] = useState('1');
  const [topP, setTopP] = useState('0.95');
  const [maxTokens, setMaxTokens] = useState('256');
  const [stops, setStops] = useState('');
  const [webSearch, setWebSearch] = useState(true);
  const [stream, setStream] = useState(true);
  const [instruction, setInstruction] = useState('');
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
    const context = [
      ...(instruction.trim() ? [{ type: 'Instruction', text: instruction.trim() }] : []),
      ...turns,
      { type: 'Human', text: message.trim() },
    ];
    const stopTokens = stops
      .split('\n')
      .map((s) => s.replace(/\\n/g, '\n'))
      .filter((s) => s.length > 0);
    const body = {
      context,
      config,
      temperature: Number(temperature),
      top_p: Number(topP),
      max_tokens: Number(maxTokens),
      web_search: webSearch,
      ...(stopTokens.length ? { stop_tokens: stopTokens } : {}),
    };
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
      if (text || (err instanceof ApiError && err.status !== 404)) setUsageNote('The token count and cost of this call are not available yet: see the Usage page.');
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
        <div role="status" class="call-usage" data-testid="call-usage">
          {usage && (
            <dl class="inline-dl">
              <div>
                <dt>Input tokens</dt>
                <dd>{integer(usage.inputTokens)}</dd>
              </div>
              <div>
                <dt>Output tokens</dt>
                <dd>{integer(usage.outputTokens)}</dd>
              </div>
              <div>
                <dt>Cost</dt>
                <dd>{usd(usage.cost, { minDecimals: 2 })}</dd>
              </div>
            </dl>
          )}
          {usageNote && <p class="muted">{usageNote}</p>}
        </div>
      </div>

      <form class="card pg-settings" onSubmit={run} aria-label="Request settings">
        <h2>Settings</h2>
        <Field
          label="Model (config)"
          hint={demo ? 'Demo model: this service runs tollgate’s built-in sample model, not a real one. Replies are sample text; tokens are billed as usual.' : undefined}
        >
          {(p) => (
            <select {...p} name="config" value={config} onChange={(e) => setConfig(val(e))}>
              {MODELS.map((m) => (
                <option key={m.value} value={m.value}>
                  {demo ? m.label.replace(' — ', ' (demo) — ') : m.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <div class="grid-2">
          <Field label="Temperature" hint="0 to 1">
            {(p) => <input {...p} name="temperature" type="number" min="0" max="1" step="0.05" required value={temperature} onInput={(e) => setTemperature(val(e))} />}
          </Field>
          <Field label="top_p" hint="0 to 1">
            {(p) => <input {...p} name="top_p" type="number" min="0" max="1" step="0.05" required value={topP} onInput={(e) => setTopP(val(e))} />}
          </Field>
        </div>
        <Field label="Max tokens" hint="1 to 1024">
          {(p) => <input {...p} name="max_tokens" type="number" min="1" max="1024" step="1" required value={maxTokens} onInput={(e) => setMaxTokens(val(e))} />}
        </Field>
        <Field label="Stop tokens" hint="One per line; write \n for a newline.">
          {(p) => <textarea {...p} name="stop_tokens" rows={2} value={stops} onInput={(e) => setStops(val(e))} />}
        </Field>
        <div class="checkbox">
          <input id="pg-web" type="checkbox" checked={webSearch} onChange={(e) => setWebSearch((e.target as HTMLInputElement).checked)} />
          <label for="pg-web">Web search</label>
        </div>
        <div class="checkbox">
          <input id="pg-stream" type="checkbox" checked={stream} onChange={(e) => setStream((e.target as HTMLInputElement).checked)} />
          <label for="pg-stream">Stream the reply</label>
        </div>
        <Field label="Instruction (optional)">
          {(p) => <textarea {...p} name="instruction" rows={2} value={instruction} onInput={(e) => setInstruction(val(e))} />}
        </Field>
      </form>
    </div>
  );
}

function inferenceError(err: ApiError): string {
  const d = describeDetail(err.status, err.detail);
  if (err.status === 401) return `The key was refused (401): ${d}. Check the secret, or create a new key.`;
  if (err.status === 402) return `Not enough credit (402): ${d}. Add credit on the Billing page.`;
  if (err.status === 429) return `Rate limited (429): ${d}`;
  return `${d} (HTTP ${err.status})`;
}

/** Reads `data: {…}` lines of a text/event-stream body and yields each chunk's text. */
async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buf += decoder.decode(value, { stream: true });
    if (done) buf += decoder.decode();
    let sep: number;
    while ((sep = buf.search(/\r?\n\r?\n/)) >= 0) {
      const event = buf.slice(0, sep);
      buf = buf.slice(buf.slice(sep).match(/^\r?\n\r?\n/)![0].length + sep);
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (!data || data === '[DONE]') continue;
      const parsed = JSON.parse(data) as { text?: string; detail?: unknown };
      if (parsed.detail !== undefined && parsed.text === undefined) throw new ApiError(500, parsed.detail);
      if (parsed.text) yield parsed.text;
    }
    if (done) return;
  }
}
