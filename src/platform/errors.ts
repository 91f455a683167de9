/**
 * A broken business rule. Expected outcomes are events; only a rule that refuses a command throws,
 * with a code that the api maps to an HTTP status in one place (src/platform/http/middleware/errors.ts).
 * Use cases (src/<area>/usecases) throw it too, `unavailable` when what they must read cannot be reached.
 */
export type DomainErrorCode =
  | 'invalid' // 422: a value sent breaks a documented rule (`field` names it)
  | 'unauthenticated' // 401
  | 'payment_required' // 402: not funded, balance too low
  | 'forbidden' // 403: the actor may not do this
  | 'not_found' // 404: unknown, or not visible to the actor
  | 'conflict' // 409: the state does not allow it (accept twice, already a member)
  | 'unprocessable' // 422
  | 'rate_limited' // 429 + Retry-After: a limit on how often this may be done was reached
  | 'bad_request' // 400: cannot be served as sent (a prompt over the context window), or a provider refused it for a reason that is not a field's value (the message says why)
  | 'unavailable'; // 503 + Retry-After: a store or provider the rule needs cannot be reached now (retry shortly)

export class DomainError extends Error {
  override readonly name = 'DomainError';
  /** Structured facts the answer carries beside `detail` (which budget refused a request, say). */
  fields?: Readonly<Record<string, unknown>>;
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    /** The request field at fault, for an `invalid` value (its 422 detail names it). */
    readonly field?: string,
    /** For `unavailable` and `rate_limited`: the seconds a client should wait before it retries (Retry-After). */
    readonly retryAfterSeconds = 1,
  ) {
    super(message);
  }
}

/** `err` answering with `fields` beside its detail. */
export function withFields(err: DomainError, fields: Record<string, unknown>): DomainError {
  err.fields = fields;
  return err;
}

export const invalid = (m: string, field?: string) => new DomainError('invalid', m, field);
export const forbidden = (m = 'Forbidden') => new DomainError('forbidden', m);
export const notFound = (m: string) => new DomainError('not_found', m);
export const conflict = (m: string) => new DomainError('conflict', m);
export const paymentRequired = (m: string) => new DomainError('payment_required', m);
export const refused = (m: string) => new DomainError('bad_request', m);
export const unavailable = (m: string, retryAfterSeconds = 1) => new DomainError('unavailable', m, undefined, retryAfterSeconds);
