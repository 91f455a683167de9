import { Router } from 'express';
import type { z } from 'zod';
import { keysOf, auditKeys, readSession, sessionTokenOf, membership } from '../../accounts';
import { requireMember, requireSession, userOf, workspaceOf } from '../../accounts/routes';
import { BUCKET_SECONDS, bucketStart } from '../projections/usage/projection';
import { MAX_POINTS, usageSeries as readUsageSeries } from '../projections/usage/queries';
import type { Services } from '../../services';
import { PerKeyCap } from '../../platform/http/middleware/limits';
import { EventStreamWriter, sseFrame } from '../../platform/http/sse';
import { HttpError } from '../../platform/http/middleware/errors';
import { validate } from '../../platform/http/contract';
import { usageBody, usageLive, usageSeries } from './usage-schemas';

/**
 * GET /v1/workspaces/:ws/usage?granularity=minute|hour|day&from&to&groupBy=key|model
 *   from/to: ISO-8601 or Unix seconds; from inclusive (rounded down to its bucket), to exclusive.
 *   Defaults: the last 60 minutes, 24 hours or 30 days, up to and including the current bucket.
 * GET /v1/workspaces/:ws/usage/live — server-sent events: `event: usage`, one per debited request.
 */
const DEFAULT_SPAN: Record<'minute' | 'hour' | 'day', number> = { minute: 60, hour: 24, day: 30 };

/**
 * How often an open live stream re-checks its session and membership. Two Redis reads per stream
 * per period; a logout or removal closes the stream within this period of the change being projected.
 */
export const LIVE_RECHECK_MS = 500;

/** A live stream whose reader is this far behind (about 4,000 usage events) is closed: pub/sub cannot wait for it. */
export const LIVE_MAX_BEHIND_BYTES = 1024 * 1024;

async function stillAllowed(s: Services, token: string, workspaceId: string, userId: string): Promise<boolean> {
  const [session, m] = await Promise.all([readSession(s, token), membership(s.readModels, workspaceId, userId)]);
  return session?.userId === userId && m !== null;
}

export function usageRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);

  r.get(usageSeries.path, session, member, async (req, res) => {
    const q = validate(usageSeries, req).query;
    const step = BUCKET_SECONDS[q.granularity];
    const nowS = Math.floor(s.now().getTime() / 1000);
    const to = q.to ?? bucketStart(nowS, q.granularity) + step;
    const from = q.from ?? to - DEFAULT_SPAN[q.granularity] * step;
    if (from >= to) throw new HttpError(422, [{ loc: ['query', 'from'], msg: 'from must be before to', type: 'value_error' }]);
    const points = Math.ceil((to - bucketStart(from, q.granularity)) / step);
    if (points > MAX_POINTS) {
      throw new HttpError(422, [
        { loc: ['query', 'from'], msg: `the range holds ${points} ${q.granularity}s; at most ${MAX_POINTS} per request`, type: 'value_error' },
      ]);
    }
    const ws = workspaceOf(res).workspaceId;
    const series = await readUsageSeries(s.readModels, { workspaceId: ws, granularity: q.granularity, from, to, groupBy: q.groupBy });
    let names: Map<string, string> | null = null;
    let live: Set<string> | null = null;
    if (q.groupBy === 'key') {
      names = new Map((await keysOf(s.readModels, ws)).map((k) => [k.keyId, k.name]));
      live = new Set(names.keys());
      // A deleted key keeps its name in the audit read model.
      const gone = series.map((x) => x.group!).filter((id) => id && !live!.has(id));
      for (const [id, k] of await auditKeys(s.readModels, gone)) if (k.name) names.set(id, k.name);
    }
    res.json({
      workspaceId: ws,
      granularity: q.granularity,
      from: new Date(bucketStart(from, q.granularity) * 1000).toISOString(),
      to: new Date(to * 1000).toISOString(),
      groupBy: q.groupBy ?? null,
      series: series.map((x) => ({
        ...(q.groupBy === 'key' ? { keyId: x.group, keyName: names?.get(x.group!) ?? null, keyDeleted: !live?.has(x.group!) } : {}),
        ...(q.groupBy === 'model' ? { model: x.group } : {}),
        total: x.total,
        points: x.points,
      })),
    } satisfies z.input<typeof usageBody>);
  });

  const liveCap = new PerKeyCap(s.config.LIVE_STREAMS_PER_USER, 'live usage streams');

  r.get(usageLive.path, session, member, async (req, res) => {
    const ws = workspaceOf(res).workspaceId;
    const user = userOf(res);
    const release = liveCap.acquire(user.userId);
    const out = new EventStreamWriter(res, LIVE_MAX_BEHIND_BYTES);
    let closed = false;
    let stop: (() => void) | null = null;
    // A ping only when nothing is waiting for the reader: it keeps proxies from timing out an idle stream.
    const ping = setInterval(() => out.bytesBehind === 0 && out.push(': ping\n\n'), 15_000);
    // Access is not a property of the connection: a logout or a removal ends the stream.
    const token = sessionTokenOf(req)?.token ?? '';
    const recheck = setInterval(() => {
      void stillAllowed(s, token, ws, user.userId).then(
        (ok) => {
          if (!ok && !closed) {
            end();
            out.end(sseFrame({ detail: 'Access to this workspace ended (logged out or removed)' }, 'closed'));
          }
        },
        () => undefined,
      );
    }, LIVE_RECHECK_MS);
    const end = () => {
      if (closed) return;
      closed = true;
      clearInterval(ping);
      clearInterval(recheck);
      release();
      stop?.();
      stop = null;
    };
    req.on('close', end);
    res.on('error', end);
    const unlisten = await s.liveUsage.listen(ws, (msg) => {
      if (closed || out.push(sseFrame(msg, 'usage'))) return;
      // Pub/sub cannot wait for this reader: rather than hold an ever longer backlog, end its stream.
      end();
      out.end(sseFrame({ detail: 'This stream fell too far behind; reconnect and refetch the usage since then' }, 'closed'));
    });
    if (closed) return unlisten();
    stop = unlisten;
    // Headers go out only now that the subscription is confirmed: a caller who has the 200 gets
    // every debit published after it.
    out.push('retry: 3000\n: connected\n\n');
  });

  return r;
}
