import { Router } from 'express';
import type { z } from 'zod';
import { BUCKET_SECONDS, bucketStart } from '../projections/usage/projection';
import { MAX_POINTS, usageSeries as readUsageSeries } from '../projections/usage/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../../accounts/routes';
import { readSession, sessionHash, sessionTokenOf, membership } from '../../accounts';
import { ACCESS_ENDED_TEXT, accessEndedOf } from '../projections/usage/access-ended';
import { PerKeyCap } from '../../platform/http/middleware/limits';
import { EventStreamWriter, sseFrame } from '../../platform/http/sse';
import { HttpError } from '../../platform/http/middleware/errors';
import { mount } from '../../platform/http/mount';
import { usageBody, usageLive, usageSeries } from './usage-schemas';
import { focusCsv, labelSeries, usageCsv } from './usage-export';

/**
 * GET /v1/workspaces/:ws/usage?granularity=minute|hour|day&from&to&groupBy=key|member|config|endpoint|model&format=json|csv|focus
 *   from/to: ISO-8601 or Unix seconds; from inclusive (rounded down to its bucket), to exclusive.
 *   Defaults: the last 60 minutes, 24 hours or 30 days, up to and including the current bucket.
 * GET /v1/workspaces/:ws/usage/live — server-sent events: `event: usage`, one per debited request.
 */
const DEFAULT_SPAN: Record<'minute' | 'hour' | 'day', number> = { minute: 60, hour: 24, day: 30 };

/**
 * How often an open live stream re-checks its session and membership. A removal, a leave or a
 * logout closes the stream in event order (the access-ended marker on the live channel, see
 * projections/usage/access-ended.ts); this re-check is the backstop for what has no event: a session
 * that expires by its TTL, or a marker skipped while the usage projection rebuilds.
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

  mount(r, usageSeries, session, member, async (_req, res, { query: q }) => {
    const step = BUCKET_SECONDS[q.granularity];
    const nowS = Math.floor(s.now().getTime() / 1000);
    const to = q.to ?? bucketStart(nowS, q.granularity) + step;
    const from = q.from ?? to - DEFAULT_SPAN[q.granularity] * step;
    if (from >= to) throw new HttpError(422, [{ loc: ['query', 'from'], msg: 'from must be before to', type: 'value_error' }]);
    const points = Math.ceil((to - bucketStart(from, q.granularity)) / step);
    if (points > MAX_POINTS) {
      throw new HttpError(422, [
        {
          loc: ['query', 'from'],
          msg: `the range holds ${points} ${q.granularity}s; at most ${MAX_POINTS} per request`,
          type: 'value_error',
        },
      ]);
    }
    if (q.format === 'focus' && q.groupBy && q.groupBy !== 'key') {
      throw new HttpError(422, [
        { loc: ['query', 'groupBy'], msg: 'format=focus has one row per API key: leave groupBy out or set it to key', type: 'value_error' },
      ]);
    }
    const ws = workspaceOf(res).workspaceId;
    const groupBy = q.format === 'focus' ? 'key' : q.groupBy;
    const series = await labelSeries(
      s.readModels,
      ws,
      groupBy,
      await readUsageSeries(s.readModels, { workspaceId: ws, granularity: q.granularity, from, to, groupBy }),
    );
    if (q.format === 'csv' || q.format === 'focus') {
      const focus = q.format === 'focus';
      res
        .status(200)
        .set({
          'Content-Type': 'text/csv; charset=utf-8',
          'Content-Disposition': `attachment; filename="tollgate-${focus ? 'focus' : 'usage'}-${ws}.csv"`,
          'Cache-Control': 'no-store',
        })
        .send(focus ? focusCsv(ws, series, q.granularity) : usageCsv(series, q.granularity, groupBy));
      return;
    }
    res.json({
      workspaceId: ws,
      granularity: q.granularity,
      from: new Date(bucketStart(from, q.granularity) * 1000).toISOString(),
      to: new Date(to * 1000).toISOString(),
      groupBy: q.groupBy ?? null,
      series: series.map(({ group: _g, groupName: _n, ...x }) => x),
    } satisfies z.input<typeof usageBody>);
  });

  const liveCap = new PerKeyCap(s.config.LIVE_STREAMS_PER_USER, 'live usage streams');

  mount(r, usageLive, session, member, async (req, res) => {
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
    const mySession = sessionHash(token);
    const unlisten = await s.liveUsage.listen(ws, (msg) => {
      if (closed) return;
      const ended = accessEndedOf(msg);
      if (ended) {
        // Never forwarded: it only closes the stream of the person (and session) it names.
        if (ended.userId === user.userId && (ended.session === undefined || ended.session === mySession)) {
          end();
          out.end(sseFrame({ detail: ACCESS_ENDED_TEXT[ended.reason] }, 'closed'));
        }
        return;
      }
      if (out.push(sseFrame(msg, 'usage'))) return;
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
