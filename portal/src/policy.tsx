import { useEffect, useState } from 'preact/hooks';
import { get, post } from './api';
import { Dialog, ErrorMessage, Link, Loading, Message } from './components/ui';
import { useSession } from './state';
import type { Me, PolicyStatus, UsagePolicy } from './api-types';
import './policy.css';
import { useAction } from './action';

/** GET /v1/policies/usage (docs/USAGE-POLICY.md): the rules every user accepts; the user's standing is in GET /v1/me. */
export type { PolicyStatus, UsagePolicy } from './api-types';

export const USAGE_POLICY_PATH = '/usage-policy';

let cached: Promise<UsagePolicy> | null = null;
const loadPolicy = () => (cached ??= get<UsagePolicy>('/v1/policies/usage').catch((err) => ((cached = null), Promise.reject(err))));

export function useUsagePolicy(): { policy: UsagePolicy | null; error: unknown } {
  const [policy, setPolicy] = useState<UsagePolicy | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    loadPolicy().then(setPolicy, setError);
  }, []);
  return { policy, error };
}

/** The user's policy status in /v1/me (absent from an older service: treated as accepted). */
export function policyStatusOf(me: Me | null): PolicyStatus | null {
  const p = me?.usagePolicy as PolicyStatus | undefined;
  return p && typeof p.accepted === 'boolean' ? p : null;
}

export function UsageRules({ policy }: { policy: UsagePolicy }) {
  return (
    <ol class="policy-rules">
      {policy.rules.map((r) => (
        <li key={r.number}>
          <strong>{r.title}</strong> {r.text}
        </li>
      ))}
    </ol>
  );
}

/** The page /usage-policy, signed in or not. */
export function UsagePolicyPage() {
  const { policy, error } = useUsagePolicy();
  const { me } = useSession();
  const status = policyStatusOf(me);
  useEffect(() => {
    document.title = 'Usage policy — tollgate';
  }, []);
  return (
    <section aria-labelledby="policy-title" class="policy-page">
      <h1 id="policy-title">Usage policy</h1>
      {error ? (
        <ErrorMessage error={error} />
      ) : !policy ? (
        <Loading what="Loading the usage policy" />
      ) : (
        <>
          <p class="lede">
            Version {policy.version}, effective {policy.effectiveDate}. These rules apply to every call made with a key of your workspaces.
          </p>
          <UsageRules policy={policy} />
          {status &&
            (status.accepted ? <Message kind="success">You accepted this version.</Message> : <AcceptButton version={policy.version} />)}
          {!me && (
            <p>
              <Link href="/signup">Create an account</Link> · <Link href="/login">Log in</Link>
            </p>
          )}
        </>
      )}
    </section>
  );
}

function AcceptButton({ version, onDone }: { version: string; onDone?: () => void }) {
  const { refresh } = useSession();
  const {
    run: accept,
    busy,
    error,
  } = useAction(async () => {
    await post('/v1/policies/usage/accept', { version });
    await refresh();
    onDone?.();
  });
  return (
    <>
      <ErrorMessage error={error} />
      <button type="button" class="button button-primary" onClick={accept} disabled={busy}>
        {busy ? 'Accepting…' : `Accept version ${version}`}
      </button>
    </>
  );
}

/** The signup form's part: the rules, and a required checkbox. */
export function PolicyConsent({ checked, onChange }: { checked: boolean; onChange: (version: string | null) => void }) {
  const { policy, error } = useUsagePolicy();
  if (error) return <ErrorMessage error={error} />;
  if (!policy) return <Loading what="Loading the usage policy" />;
  return (
    <div class="policy-consent">
      <h2 id="consent-title">Usage policy</h2>
      <div class="policy-box" tabIndex={0} role="region" aria-labelledby="consent-title">
        <UsageRules policy={policy} />
      </div>
      <div class="checkbox">
        <input
          id="accept-policy"
          type="checkbox"
          name="acceptPolicy"
          required
          checked={checked}
          onChange={(e) => onChange((e.target as HTMLInputElement).checked ? policy.version : null)}
        />
        <label for="accept-policy">I accept the usage policy (version {policy.version})</label>
      </div>
      <p class="hint">
        Also on its own page: <Link href={USAGE_POLICY_PATH}>usage policy</Link>.
      </p>
    </div>
  );
}

/**
 * Asks a signed-in user who has not accepted the current rules (an account from before they were
 * recorded, or a new version) once per page session; "Later" leaves it to the keys page.
 */
let asked = false;
export function PolicyPrompt() {
  const { me } = useSession();
  const status = policyStatusOf(me);
  const [open, setOpen] = useState(false);
  const { policy } = useUsagePolicy();
  useEffect(() => {
    if (status && !status.accepted && !asked && policy) {
      asked = true;
      setOpen(true);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- status is a new object each render; only its `accepted` matters
  }, [status?.accepted, policy]);
  if (!policy || !status) return null;
  const title = status.acceptedVersion ? 'The usage policy changed' : 'Please accept the usage policy';
  return (
    <Dialog open={open} title={title} onClose={() => setOpen(false)}>
      <p>
        Version {policy.version}, effective {policy.effectiveDate}. Creating API keys needs your acceptance; your existing keys keep
        working.
      </p>
      <div class="policy-box" tabIndex={0}>
        <UsageRules policy={policy} />
      </div>
      <div class="actions">
        <button type="button" class="button" onClick={() => setOpen(false)}>
          Later
        </button>
        <AcceptButton version={policy.version} onDone={() => setOpen(false)} />
      </div>
    </Dialog>
  );
}

/** The one line beside "Create API key". */
export function KeyReminder() {
  return (
    <p class="hint key-reminder">
      Keep keys secret: never in client-side code, never transferred. <Link href={USAGE_POLICY_PATH}>Usage policy</Link>
    </p>
  );
}

/** On the keys page when creating was refused because the rules are not accepted. */
export function PolicyRequired({ message }: { message: string }) {
  return (
    <Message kind="warning">
      {message.split(' Read it at')[0]} <Link href={USAGE_POLICY_PATH}>Read and accept the usage policy</Link>.
    </Message>
  );
}

/** On the keys page before anything is tried, when /v1/me says the current rules are not accepted. */
export function PolicyNotice() {
  const status = policyStatusOf(useSession().me);
  if (!status || status.accepted) return null;
  const what = status.acceptedVersion
    ? `The usage policy changed (version ${status.currentVersion}): creating API keys needs your acceptance.`
    : `You have not accepted the usage policy (version ${status.currentVersion}): creating API keys needs it.`;
  return <PolicyRequired message={what} />;
}
