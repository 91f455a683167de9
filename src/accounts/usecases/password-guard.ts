/**
 * What signup and login need of the login guard (src/accounts/sessions/login-guard.ts, built once
 * per process as `s.loginGuard`): the per-e-mail failure budget and the cap on password hashing.
 * The guard refuses in HTTP terms, so the use cases name only this shape; the route applies the
 * per-address limit before calling them.
 */
export interface PasswordGuard {
  /** Counts an attempt for this e-mail; refuses once too many failed in a row. */
  email(email: string): Promise<void>;
  /** A successful login clears the e-mail's failures. */
  succeeded(email: string): Promise<void>;
  /** Runs password hashing (scrypt) under the per-process cap. */
  hash<T>(work: () => Promise<T>): Promise<T>;
}
