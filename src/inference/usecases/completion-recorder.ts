import type { Services } from '../../services';
import { NewEvent, WrongExpectedVersion } from '../../platform/eventstore/port';
import { streams } from '../../platform/streams';
import { completed } from '../metering';
import type { Prices } from '../metering';
import type { Reservations } from '../../billing';
import type { NanoUsd } from '../../platform/money';
import type { Prepared } from './request-plan';

/** What recording a request's completion needs of it. */
export type Recordable = Pick<Prepared, 'facts' | 'reserved' | 'startedMs' | 'metadata'>;

/** Writes a request's InferenceCompleted + TokensDebited, retrying while the store is down. */
export class CompletionRecorder {
  /** Background retries of completions that could not be written at once (streams already sent). */
  private readonly pending = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly s: Services,
    private readonly prices: Prices,
    private readonly reservations: Reservations,
  ) {}

  /**
   * One append at exact revision 0 (after InferenceRequested), retried with the same event ids (an
   * idempotent no-op if an earlier try did land). A conflict means the sweeper closed the request
   * first: it is recorded either way. When the store stays down, a reply the caller already has is
   * retried in the background for a few minutes; otherwise the sweeper closes the request later.
   */
  async append(p: Recordable, events: NewEvent[], keepTrying: boolean): Promise<boolean> {
    const stream = streams.inference(p.facts.requestId);
    const attempt = async () => {
      try {
        await this.s.store.append(stream, events, { expectedRevision: 0n });
        // Recorded: the hold becomes the settled cost until the projector applies the debit (credit is
        // not held for projector lag). If this fails or the process dies first, the projector releases it.
        await this.reservations
          .markPending(p.facts.workspaceId, p.facts.requestId, costOf(events))
          .catch((err) => this.s.log.warn({ err }, 'could not mark a hold pending'));
        return true;
      } catch (err) {
        if (err instanceof WrongExpectedVersion) {
          this.s.log.warn({ requestId: p.facts.requestId }, 'request was already closed (by the sweeper)');
          return true;
        }
        this.s.log.error({ err, requestId: p.facts.requestId }, 'could not record an inference completion');
        return false;
      }
    };
    for (const wait of [0, 50, 250]) {
      if (wait) await new Promise((r) => setTimeout(r, wait));
      if (await attempt()) return true;
    }
    if (keepTrying && !this.closed) {
      const job = (async () => {
        for (let i = 0; i < 20 && !this.closed; i++) {
          await new Promise((r) => setTimeout(r, 15_000).unref());
          if (this.closed || (await attempt())) return;
        }
      })();
      this.pending.add(job);
      void job.finally(() => this.pending.delete(job));
    }
    return false;
  }

  /**
   * A non-streaming caller who got 503 because the reply could not be recorded pays nothing: the
   * request is closed as `store_unavailable` (zero debit, the hold released) once the store takes
   * writes again, retried in the background. (If this process dies first, the sweeper closes it
   * as abandoned.)
   */
  closeUnbilled(p: Recordable): void {
    const [done, debit] = completed(
      p.facts,
      this.prices,
      { finishReason: 'store_unavailable', outputTokens: 0, durationMs: this.s.now().getTime() - p.startedMs },
      p.reserved,
    );
    const events = [done, debit].map((e) => ({ id: this.s.newId(), type: e.type, data: e.data, metadata: p.metadata }));
    void this.append(p, events, true);
  }

  close(): void {
    this.closed = true;
  }
}

/** The amount of the TokensDebited among a completion's events. */
function costOf(events: NewEvent[]): NanoUsd {
  return BigInt((events.find((e) => e.type === 'TokensDebited')?.data as { amountNanoUsd: string }).amountNanoUsd);
}
