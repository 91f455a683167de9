import type { Redis } from 'ioredis';
import type { Config } from '../../platform/config';
import type { Keyspace } from '../../platform/projections/keyspace';
import { HttpError } from '../../platform/http/middleware/errors';
import { WorkGate } from '../../platform/http/middleware/limits';
import { Throttle } from '../../platform/http/middleware/throttle';

/**
 * What stands between a password guesser and scrypt (docs/ACCOUNTS.md, "Login throttling"):
 *
 * - per client address: LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE login and signup attempts, counted
 *   before any hashing, so one client cannot keep the hashing threads busy;
 * - per e-mail: LOGIN_FAILURES_PER_EMAIL attempts not followed by a success within
 *   LOGIN_FAILURE_WINDOW_SECONDS (counted before hashing, cleared by a successful login), so
 *   guesses spread over many addresses still stop;
 * - per process: PASSWORD_HASH_CONCURRENCY hashes at once and PASSWORD_HASH_QUEUE waiting; beyond
 *   that a request is refused at once (503, Retry-After: 1) instead of queueing behind a flood, so a
 *   genuine login waits at most for the queue ahead of it.
 *
 *   {prefix}throttle:login-address:{hash}   {prefix}throttle:login-email:{hash}
 *
 * One per process (the hashing cap is per process): built in buildServices (src/init.ts) as `s.loginGuard`.
 */
export class LoginGuard {
  private readonly perAddress: Throttle;
  private readonly perEmail: Throttle;
  private readonly hashing: WorkGate;
  private readonly busy = () =>
    new HttpError(503, 'Too many logins are being checked right now; retry in a second', { 'Retry-After': '1' });

  constructor(s: { config: Config; redis: Redis; ks: Keyspace }) {
    const c = s.config;
    this.perAddress = new Throttle(s.redis, s.ks.shared('throttle', 'login-address'), c.LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE, 60);
    this.perEmail = new Throttle(
      s.redis,
      s.ks.shared('throttle', 'login-email'),
      c.LOGIN_FAILURES_PER_EMAIL,
      c.LOGIN_FAILURE_WINDOW_SECONDS,
    );
    this.hashing = new WorkGate(c.PASSWORD_HASH_CONCURRENCY, c.PASSWORD_HASH_QUEUE, this.busy);
  }

  /** Refuses at once while the hashing gate is full, before any Redis or store work. */
  refuseIfBusy(): void {
    if (this.hashing.full) throw this.busy();
  }

  address(ip: string | undefined): Promise<void> {
    return this.perAddress.take(ip ?? 'unknown', (s) => `Too many login attempts from this address; retry in ${s} s`);
  }

  email(email: string): Promise<void> {
    return this.perEmail.take(email, (s) => `Too many failed logins for this e-mail address; retry in ${s} s`);
  }

  succeeded(email: string): Promise<void> {
    return this.perEmail.reset(email);
  }

  /** Runs password hashing (scrypt) under the per-process cap. */
  hash<T>(work: () => Promise<T>): Promise<T> {
    return this.hashing.run(work);
  }
}
