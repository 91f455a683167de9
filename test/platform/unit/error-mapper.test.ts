import type { Request, Response } from 'express';
import { DomainError } from '../../../src/platform/errors';
import { errorHandler, HttpError } from '../../../src/platform/http/middleware/errors';
import type { Logger } from '../../../src/platform/log';

/** The one place a DomainError becomes an HTTP answer: status, headers and `{"detail": ...}`. */
function answer(err: unknown) {
  const out: { status?: number; headers: Record<string, string>; body?: unknown } = { headers: {} };
  const res = {
    headersSent: false,
    status(code: number) {
      out.status = code;
      return res;
    },
    set(h: string | Record<string, string>, v?: string) {
      if (typeof h === 'string') out.headers[h] = v!;
      else Object.assign(out.headers, h);
      return res;
    },
    json(body: unknown) {
      out.body = body;
      return res;
    },
  };
  const log = { warn: () => undefined, error: () => undefined } as unknown as Logger;
  errorHandler(log)(err, { path: '/x', header: () => undefined } as unknown as Request, res as unknown as Response, () => undefined);
  return out;
}

describe('errorHandler maps DomainError codes', () => {
  it.each([
    ['unauthenticated', 401],
    ['payment_required', 402],
    ['forbidden', 403],
    ['not_found', 404],
    ['conflict', 409],
    ['bad_request', 400],
  ] as const)('%s → %i with the message as detail', (code, status) => {
    expect(answer(new DomainError(code, 'why'))).toEqual({ status, headers: {}, body: { detail: 'why' } });
  });

  it('unavailable → 503 with Retry-After: 1', () => {
    expect(answer(new DomainError('unavailable', 'Service temporarily unavailable: balances cannot be read'))).toEqual({
      status: 503,
      headers: { 'Retry-After': '1' },
      body: { detail: 'Service temporarily unavailable: balances cannot be read' },
    });
  });

  it('invalid → 422 in the FastAPI list, naming the field', () => {
    expect(answer(new DomainError('invalid', 'too long', 'name')).body).toEqual({
      detail: [{ loc: ['body', 'name'], msg: 'too long', type: 'value_error' }],
    });
  });

  it('an HttpError keeps its own status and headers', () => {
    expect(answer(new HttpError(429, 'slow down', { 'Retry-After': '3' }))).toEqual({
      status: 429,
      headers: { 'Retry-After': '3' },
      body: { detail: 'slow down' },
    });
  });
});
