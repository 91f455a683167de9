import { useState } from 'preact/hooks';

/** An action the user started, as a component shows it: running (busy) and the error it ended with. */
export interface Action<A extends unknown[]> {
  /** Clears the error, runs the work, keeps its error (never throws), and is no longer busy when it ends. */
  run: (...args: A) => Promise<void>;
  busy: boolean;
  /** The arguments of the run in progress (which row's button is working), null when idle. */
  running: A | null;
  error: unknown;
  /** For what the component says itself (a value it refused before calling the API, a dialog reopened). */
  setError: (error: unknown) => void;
}

/** Where the action's messages live when not in the hook's own `error` (the billing cards' messages). */
export interface ActionOptions {
  /** Runs as the work starts (default: clears `error`). */
  start?: () => void;
  /** Receives what the work threw (default: `error`). */
  fail?: (err: unknown) => void;
}

/** The busy / error / try-finally around a button's or form's work, written once. */
export function useAction<A extends unknown[]>(work: (...args: A) => Promise<unknown>, opts: ActionOptions = {}): Action<A> {
  const [running, setRunning] = useState<A | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async (...args: A) => {
    setRunning(args);
    (opts.start ?? (() => setError(null)))();
    try {
      await work(...args);
    } catch (err) {
      (opts.fail ?? setError)(err);
    } finally {
      setRunning(null);
    }
  };
  return { run, busy: running !== null, running, error, setError };
}
