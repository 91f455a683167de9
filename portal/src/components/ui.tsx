import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { errorText } from '../api';
import { linkHandler } from '../router';

/** An in-page link; `onNavigate` runs first (e.g. to close the phone menu). */
export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; onNavigate?: () => void }) {
  const { onNavigate, ...rest } = props;
  return (
    <a
      {...(rest as AnchorHTMLAttributes<HTMLAnchorElement>)}
      onClick={(e) => {
        onNavigate?.();
        linkHandler(e);
      }}
    />
  );
}

/** An error or success message; errors are announced at once (role=alert). */
export function Message({ kind = 'error', children }: { kind?: 'error' | 'success' | 'info' | 'warning'; children: ComponentChildren }) {
  if (!children) return null;
  return (
    <div class={`message message-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  return <Message kind="error">{errorText(error)}</Message>;
}

/** A labelled input: the label is a real <label for>, hints and errors are described-by. */
export function Field({
  label,
  hint,
  error,
  children,
  id: givenId,
}: {
  label: ComponentChildren;
  hint?: ComponentChildren;
  error?: string | null;
  id?: string;
  children: (p: { id: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean }) => ComponentChildren;
}) {
  const auto = useId();
  const id = givenId ?? `f${auto}`;
  const described = [hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field${error ? ' field-invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children({ id, 'aria-describedby': described, 'aria-invalid': error ? true : undefined })}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p class="field-error" id={`${id}-err`}>
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * A modal dialog on the native <dialog> element: focus moves into it, Escape closes it, and the
 * page behind is inert — keyboard users need nothing more.
 */
export function Dialog({
  open,
  title,
  onClose,
  children,
  labelledBy,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  labelledBy?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const generatedId = useId();
  const titleId = labelledBy ?? `dlg${generatedId}`;
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} onCancel={onClose} class="dialog">
      {open && (
        <div class="dialog-body">
          <h2 id={titleId}>{title}</h2>
          {children}
        </div>
      )}
    </dialog>
  );
}

/** "Are you sure?" with a destructive confirm button; the cancel button has focus first. */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onCancel,
  busy,
  error,
}: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
  error?: unknown;
}) {
  return (
    <Dialog open={open} title={title} onClose={onCancel}>
      <div class="dialog-text">{children}</div>
      <DialogActions error={error} onCancel={onCancel} onConfirm={onConfirm} busy={busy} label={confirmLabel} busyLabel="Working…" danger />
    </Dialog>
  );
}

/**
 * A dialog's last rows: the action's error, Cancel, then the one action. Without `onConfirm` the action
 * submits the dialog's form. `danger`: the action destroys or replaces something, so Cancel has focus first.
 */
export function DialogActions({
  error,
  onCancel,
  onConfirm,
  busy,
  label,
  busyLabel,
  danger = false,
}: {
  error?: unknown;
  onCancel: () => void;
  onConfirm?: () => void;
  busy?: boolean;
  label: string;
  busyLabel: string;
  danger?: boolean;
}) {
  return (
    <>
      <ErrorMessage error={error} />
      <div class="actions">
        <button type="button" class="button" onClick={onCancel} autofocus={danger}>
          Cancel
        </button>
        <button
          type={onConfirm ? 'button' : 'submit'}
          class={danger ? 'button button-danger' : 'button button-primary'}
          onClick={onConfirm}
          disabled={busy}
        >
          {busy ? busyLabel : label}
        </button>
      </div>
    </>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
    setTimeout(() => setState('idle'), 2500);
  };
  return (
    <>
      <button type="button" class="button" onClick={copy}>
        {state === 'copied' ? 'Copied' : label}
      </button>
      <span class="visually-hidden" role="status">
        {state === 'copied' ? 'Copied to the clipboard' : state === 'failed' ? 'Copy failed: select the text and copy it' : ''}
      </span>
    </>
  );
}

export function TrashIcon() {
  return (
    <svg
      aria-hidden="true"
      focusable="false"
      width="18"
      height="18"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
    >
      <path d="M3 6h18" />
      <path d="M8 6V4h8v2" />
      <path d="M19 6l-1 14H6L5 6" />
      <path d="M10 11v6M14 11v6" />
    </svg>
  );
}

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="loading" role="status">
      {what}…
    </p>
  );
}

/** Runs a data load, re-running when deps change; returns data, error, reload. */
export function useLoad<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: unknown[],
): { data: T | undefined; error: unknown; loading: boolean; reload: () => Promise<void> } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const done = useRef<() => void>(() => undefined);
  useEffect(() => {
    const ctl = new AbortController();
    setLoading(true);
    load(ctl.signal).then(
      (d) => {
        if (ctl.signal.aborted) return;
        setData(d);
        setError(null);
        setLoading(false);
        done.current();
      },
      (e) => {
        if (ctl.signal.aborted) return;
        setError(e);
        setLoading(false);
        done.current();
      },
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the caller's deps decide when to load again; the loader is a new function each render
  }, [...deps, tick]);
  const reload = () =>
    new Promise<void>((resolve) => {
      done.current = resolve;
      setTick((t) => t + 1);
    });
  return { data, error, loading, reload };
}
