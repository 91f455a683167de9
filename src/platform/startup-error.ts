import { Config, ConfigError } from './config';

/** A listen failure, naming the setting that chose the port. */
export class ListenFailed extends Error {
  override readonly name = 'ListenFailed';
  constructor(
    readonly setting: string,
    readonly port: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/**
 * What a failed start prints on stderr: every line starts with `tollgate: `, so with several bad
 * settings each line still says where it comes from.
 */
export function startupFailureText(message: string): string {
  return message
    .split('\n')
    .map((line) => `tollgate: ${line}\n`)
    .join('');
}

/** Turns a start-up failure into one line naming what is wrong, never a stack trace. */
export function describeStartupError(
  err: unknown,
  config?: Pick<Config, 'EVENT_STORE' | 'DATA_DIR' | 'EVENTSTORE_CONNECTION_STRING' | 'DATABASE_URL'>,
): string {
  if (err instanceof ConfigError) return err.lines.join('\n');
  if (err instanceof ListenFailed) return err.message;
  const e = err as { name?: string; message?: string; code?: string; syscall?: string; port?: number };
  if (e?.code === 'EADDRINUSE') return `cannot listen: PORT ${e.port ?? ''} is already in use`.replace('  ', ' ');
  if (e?.code === 'EACCES' && e.syscall === 'listen') return `cannot listen on PORT ${e.port ?? ''}: permission denied`;
  // One line: some drivers put a multi-line explanation into the message. gRPC (the esdb client)
  // ends its "No connection established" with a "Resolution note:" that is mostly empty: dropped then.
  const message = (e?.message ?? String(err)).split('\n')[0].replace(/\.?\s*Resolution note:\s*$/, '');
  if (e?.name === 'StoreUnavailable' && config) {
    // Name the setting to fix, not just the driver's complaint.
    const hideCredentials = (url = '') => url.replace(/\/\/([^@/]*)@/, '//***@');
    const setting =
      config.EVENT_STORE === 'esdb'
        ? `EVENTSTORE_CONNECTION_STRING=${hideCredentials(config.EVENTSTORE_CONNECTION_STRING)}`
        : config.EVENT_STORE === 'postgres'
          ? `DATABASE_URL=${hideCredentials(config.DATABASE_URL)}`
          : `DATA_DIR=${config.DATA_DIR}`;
    return `event store unavailable (EVENT_STORE=${config.EVENT_STORE}, ${setting}): ${message}`;
  }
  return `${e?.name ?? 'Error'}: ${message}`;
}
