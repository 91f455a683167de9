import pino, { Logger } from 'pino';

export type { Logger };

/** Structured JSON logs. Secrets never reach a log line: auth headers and cookies are redacted. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'tollgate', ...bindings },
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie', '*.secret', '*.password'],
      censor: '[redacted]',
    },
  });
}
