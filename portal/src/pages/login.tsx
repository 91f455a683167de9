import { useEffect, useState } from 'preact/hooks';
import { post } from '../api';
import { ErrorMessage, Field, Link } from '../components/ui';
import { navigate } from '../router';
import { useSession } from '../state';
import { PolicyConsent } from '../policy';
import { useAction } from '../action';

const val = (e: Event) => (e.target as HTMLInputElement).value;

/** Logs in; the service answers with an HttpOnly session cookie, which is all the portal keeps. */
async function logIn(email: string, password: string): Promise<void> {
  // The body also carries sessionToken (for API clients): the portal ignores it on purpose.
  await post('/v1/login', { email, password }, { quiet401: true });
}

export function LoginPage() {
  const { refresh } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  useEffect(() => {
    document.title = 'Log in — tollgate';
  }, []);

  const {
    run: submit,
    busy,
    error,
  } = useAction(async (e: Event) => {
    e.preventDefault();
    await logIn(email.trim(), password);
    await refresh();
    // Back to the page that asked for a login: only a path on this site (never //host).
    const next = new URLSearchParams(location.search).get('next') ?? '/';
    navigate(/^\/(?!\/)[\w\-/]*$/.test(next) ? next : '/', { replace: true });
  });

  return (
    <section class="card auth-card" aria-labelledby="login-title">
      <h1 id="login-title">Log in</h1>
      <form onSubmit={submit} noValidate={false}>
        <Field label="E-mail">
          {(p) => (
            <input {...p} type="email" name="email" autocomplete="username" required value={email} onInput={(e) => setEmail(val(e))} />
          )}
        </Field>
        <Field label="Password">
          {(p) => (
            <input
              {...p}
              type="password"
              name="password"
              autocomplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(val(e))}
            />
          )}
        </Field>
        <ErrorMessage error={error} />
        <button type="submit" class="button button-primary" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
      <p class="auth-switch">
        New here? <Link href="/signup">Create an account</Link>
      </p>
    </section>
  );
}

export function SignupPage() {
  const { refresh } = useSession();
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [acceptedPolicyVersion, setAcceptedPolicyVersion] = useState<string | null>(null);
  useEffect(() => {
    document.title = 'Sign up — tollgate';
  }, []);

  const {
    run: submit,
    busy,
    error,
  } = useAction(async (e: Event) => {
    e.preventDefault();
    await post('/v1/signup', { name: name.trim(), email: email.trim(), password, acceptedPolicyVersion }, { quiet401: true });
    await logIn(email.trim(), password);
    await refresh();
    navigate('/billing', { replace: true });
  });

  return (
    <section class="card auth-card" aria-labelledby="signup-title">
      <h1 id="signup-title">Create your account</h1>
      <form onSubmit={submit}>
        <Field label="Name">
          {(p) => <input {...p} name="name" autocomplete="name" required value={name} onInput={(e) => setName(val(e))} />}
        </Field>
        <Field label="E-mail">
          {(p) => <input {...p} type="email" name="email" autocomplete="email" required value={email} onInput={(e) => setEmail(val(e))} />}
        </Field>
        <Field label="Password" hint="At least 8 characters.">
          {(p) => (
            <input
              {...p}
              type="password"
              name="password"
              autocomplete="new-password"
              required
              minLength={8}
              value={password}
              onInput={(e) => setPassword(val(e))}
            />
          )}
        </Field>
        <PolicyConsent checked={acceptedPolicyVersion !== null} onChange={setAcceptedPolicyVersion} />
        <ErrorMessage error={error} />
        <button type="submit" class="button button-primary" disabled={busy}>
          {busy ? 'Creating your account…' : 'Sign up'}
        </button>
      </form>
      <p class="auth-switch">
        Have an account? <Link href="/login">Log in</Link>
      </p>
    </section>
  );
}
