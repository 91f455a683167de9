import type { ResponseContract } from './contract';
import { errorBody, validationErrorBody } from './error-schemas';

/** Error answers as the accounts, billing and policy contracts list them, over the two shared bodies. */

/** An error answer with a `{detail}` sentence body. */
export const problem = (description: string): ResponseContract => ({ description, schema: errorBody });

/** 422 in FastAPI's list format. */
export const invalidInput = (description = 'A value breaks a documented constraint'): ResponseContract => ({
  description,
  schema: validationErrorBody,
});

/** The answers of every route behind requireSession. */
export const sessionErrors = {
  401: problem('Not authenticated, or the session expired'),
} as const;

/** …a write behind requireSession: a cookie-authenticated write also needs X-Requested-With or a same-origin Origin. */
export const sessionWriteErrors = {
  ...sessionErrors,
  403: problem('A cookie-authenticated write without X-Requested-With or a same-origin Origin, or the caller lacks the role'),
} as const;

/**
 * What any route can answer before it runs: Node refuses a malformed request or oversized headers
 * with a `{detail}` body (./middleware/client-error.ts). Listed on the routes that answer no other
 * 4xx, so a generated client knows every operation's error shape.
 */
export const transportErrors = {
  400: problem('Malformed HTTP request (e.g. a header with a character that is not allowed)'),
  431: problem('Request headers too large'),
} as const;
