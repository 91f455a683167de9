import type { AppendResult, EventStore, ExpectedRevision, NewEvent } from '../eventstore/port';
import { StoreUnavailable, WrongExpectedVersion } from '../eventstore/port';
import type { Metrics } from './metrics';

export interface AppendFailure {
  at: Date;
  message: string;
}

/**
 * The EventStore port with eyes: append latency and group-commit size for /metrics, and whether
 * the store can currently be written (for /readyz). Every other call goes straight through.
 *
 * Group-commit size is observed from outside the adapter: appends whose results arrive in one
 * event-loop turn were committed together (the SQLite adapter writes the appends queued together in
 * one transaction and resolves them together).
 */
export class ObservedStore implements EventStore {
  private turnCount = 0;
  private failure: AppendFailure | null = null;

  constructor(
    readonly inner: EventStore,
    private readonly metrics: Metrics,
  ) {}

  get kind(): EventStore['kind'] {
    return this.inner.kind;
  }

  /** The last append that failed for want of a writable store, unless one succeeded since. */
  get lastAppendFailure(): AppendFailure | null {
    return this.failure;
  }

  async append(stream: string, events: NewEvent[], opts: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    const end = this.metrics.appendDuration.startTimer();
    try {
      const result = await this.inner.append(stream, events, opts);
      end({ outcome: 'ok' });
      this.failure = null;
      this.countInTurn();
      return result;
    } catch (err) {
      if (err instanceof WrongExpectedVersion) {
        end({ outcome: 'conflict' });
        this.failure = null;
      } else if (err instanceof StoreUnavailable) {
        end({ outcome: 'unavailable' });
        this.failure = { at: new Date(), message: err.message };
      } else end({ outcome: 'error' });
      throw err;
    }
  }

  private countInTurn(): void {
    if (this.turnCount++ > 0) return;
    setImmediate(() => {
      this.metrics.groupCommitSize.observe(this.turnCount);
      this.turnCount = 0;
    });
  }

  readStream(...args: Parameters<EventStore['readStream']>) {
    return this.inner.readStream(...args);
  }

  readAll(...args: Parameters<EventStore['readAll']>) {
    return this.inner.readAll(...args);
  }

  subscribeToAll(...args: Parameters<EventStore['subscribeToAll']>) {
    return this.inner.subscribeToAll(...args);
  }

  headPosition() {
    return this.inner.headPosition();
  }

  ping() {
    return this.inner.ping();
  }

  close() {
    return this.inner.close();
  }
}
