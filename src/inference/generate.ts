import type { FinishReason } from './events';
import { GenerateParams, ModelBackend, UpstreamError } from './backend';
import { OutputEnforcer } from './enforce';

export interface GenerationResult {
  /** The reply as sent (the concatenation of every onText call). */
  text: string;
  /** cl100k_base tokens of `text`. */
  outputTokens: number;
  finishReason: Exclude<FinishReason, 'abandoned' | 'store_unavailable'>;
  /** The upstream failure, when finishReason is upstream_error. */
  error?: unknown;
}

export interface GenerationOptions {
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** Longest a generation may take; past it the upstream is cut off (upstream_error). */
  timeoutMs: number;
  /** Receives the reply's text as it is released; a throw means the caller is gone. */
  onText: (text: string) => void | Promise<void>;
  /**
   * A rejection cuts the upstream off (the caller's InferenceRequested append failed); the outcome is
   * then the caller's to decide. One controller per generation serves the caller's signal, the
   * timeout and this, so the backend needs none of its own.
   */
  cancelOn?: Promise<unknown>;
}

/**
 * Runs a backend under our own enforcement of stop strings and max_tokens, and classifies the
 * end: stop / length (the reply is complete), client_disconnected (the caller left: the reply is
 * what was sent), upstream_error (the backend failed or timed out: the reply is what was sent).
 * The backend is always released: its generator is closed and, unless it ended by itself, its
 * signal aborted first (the backend relies on that to end its upstream call).
 */
export async function runGeneration(
  backend: ModelBackend,
  params: Omit<GenerateParams, 'signal'>,
  opts: GenerationOptions,
): Promise<GenerationResult> {
  const enforcer = new OutputEnforcer({ maxTokens: params.maxTokens, stop: params.stop });
  const ac = new AbortController();
  const onClientAbort = () => ac.abort(new Error('client disconnected'));
  if (opts.signal.aborted) onClientAbort();
  else opts.signal.addEventListener('abort', onClientAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort(new UpstreamError(`generation took longer than ${opts.timeoutMs} ms`));
  }, opts.timeoutMs);
  timer.unref?.();
  opts.cancelOn?.catch((err: unknown) => ac.abort(err));

  let reason: GenerationResult['finishReason'] | null = null;
  let error: unknown;
  let callerGone = false;
  // Awaits only what onText returns: a caller whose socket takes the chunk costs no promise.
  const send = (text: string): Promise<void> | void => {
    if (!text || callerGone) return;
    let pending: void | Promise<void>;
    try {
      pending = opts.onText(text);
    } catch {
      callerGone = true;
      return;
    }
    if (pending) {
      return pending.then(
        () => undefined,
        () => void (callerGone = true),
      );
    }
  };

  const it = backend.generate({ ...params, signal: ac.signal });
  let finishedNaturally = false;
  try {
    for (;;) {
      const step = await it.next();
      if (opts.signal.aborted || callerGone) break;
      if (timedOut) throw ac.signal.reason;
      if (step.done) {
        reason = step.value === 'length' ? 'length' : 'stop';
        finishedNaturally = true;
        break;
      }
      const sending = send(enforcer.push(step.value));
      if (sending) await sending;
      if (opts.signal.aborted || callerGone) break;
      if (enforcer.finished) {
        reason = enforcer.finished;
        break;
      }
    }
  } catch (err) {
    if (!(opts.signal.aborted || callerGone)) {
      reason = 'upstream_error';
      error = timedOut ? ac.signal.reason : err;
    }
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', onClientAbort);
    if (!finishedNaturally) {
      ac.abort();
      await it.return(undefined).catch(() => undefined);
    }
  }
  if (reason === null) reason = 'client_disconnected';
  const complete = reason === 'stop' || reason === 'length';
  await send(enforcer.finish(complete));
  // The caller may have left while the last text was being sent.
  if (complete && (callerGone || opts.signal.aborted)) reason = 'client_disconnected';
  return { text: enforcer.text, outputTokens: enforcer.outputTokens, finishReason: reason, ...(error ? { error } : {}) };
}
