import { useState } from 'preact/hooks';
import { get, post } from '../../api';
import { useAction } from '../../action';
import { ErrorMessage, Field, useLoad } from '../../components/ui';
import { dateTime } from '../../format';
import type { WebhookReplay } from '../../api-types';

/**
 * "Send again everything since …": a UTC date and time, sent as ISO. The same start names the same
 * replay, so a second click shows its progress instead of sending twice.
 */
export function Replays({ path }: { path: string }) {
  const [since, setSince] = useState('');
  const list = useLoad((signal) => get<{ replays: WebhookReplay[] }>(`${path}/replays`, { signal }), [path]);
  const start = useAction(async () => {
    const t = since ? new Date(`${since}:00Z`) : null;
    await post(`${path}/replays`, { since: t && !Number.isNaN(t.getTime()) ? t.toISOString() : since });
    await list.reload();
  });
  return (
    <form
      class="replays"
      aria-label="Replay"
      onSubmit={(ev) => {
        ev.preventDefault();
        void start.run();
      }}
    >
      <h4>Replay</h4>
      <Field label="Send again every event since (UTC)">
        {(p) => (
          <input
            {...p}
            name="since"
            type="datetime-local"
            required
            value={since}
            onInput={(e) => setSince((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <ErrorMessage error={start.error ?? list.error} />
      <div class="actions">
        <button type="submit" class="button" disabled={start.busy}>
          Replay since
        </button>
        <button type="button" class="button" onClick={() => void list.reload()}>
          Refresh progress
        </button>
      </div>
      {list.data && list.data.replays.length > 0 && (
        <ul aria-label="Replays">
          {list.data.replays.map((r) => (
            <li key={r.replayId} data-testid="replay">
              Since {r.since ? dateTime(r.since) : `position ${r.fromPosition}`}:{' '}
              {r.status === 'scanning' ? 'finding events' : 'all queued'}, {r.matched} events, {r.succeeded} delivered, {r.failed} failed
            </li>
          ))}
        </ul>
      )}
    </form>
  );
}
