import type { EventStore } from '../../platform/eventstore/port';

/** Where a ledger command's progress bar goes: stderr, so stdout stays the command's output. */
export interface ProgressStream {
  isTTY?: boolean;
  write(chunk: string): boolean;
}

export interface ReplayProgress {
  /** The position just replayed. */
  at(position: bigint): void;
  stop(): void;
}

const NONE: ReplayProgress = { at: () => undefined, stop: () => undefined };

/**
 * The bar `projections rebuild` shows, for a `tollgate ledger` command's replay of the store: along
 * the positions from the first event to the head (PostgreSQL's and EventStoreDB's positions do not
 * start near 0), on stderr, and only on a terminal: a pipe or a file gets nothing.
 */
export async function replayProgress(store: EventStore, label: string, stream: ProgressStream = process.stderr): Promise<ReplayProgress> {
  if (!stream.isTTY) return NONE;
  const head = await store.headPosition();
  if (head <= 0n) return NONE;
  const first = (await store.readAll({ maxCount: 1 }))[0]?.position ?? 1n;
  const along = (p: bigint) => Number(p - first + 1n);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: only a terminal loads it
  const { SingleBar } = require('cli-progress') as typeof import('cli-progress');
  const bar = new SingleBar({
    format: `${label} [{bar}] {percentage}% | {value}/{total} positions | {eta_formatted} left`,
    stream: stream as NodeJS.WritableStream,
    etaBuffer: 50,
  });
  bar.start(along(head), 0);
  let last = 0;
  return {
    at(position) {
      // One redraw per 1000 events is plenty; cli-progress throttles the terminal writes itself.
      if (++last % 1000 === 0 && position <= head) bar.update(along(position));
    },
    stop() {
      bar.update(bar.getTotal());
      bar.stop();
    },
  };
}
