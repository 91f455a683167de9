import type { Request, RequestHandler } from 'express';
import type { Metrics } from './metrics';

/** The matched route's template (`/v1/workspaces/:ws/keys`), never the path itself: bounded labels. */
function routeOf(req: Request): string {
  const route = (req as Request & { route?: { path?: unknown } }).route;
  if (route && typeof route.path === 'string') return `${req.baseUrl}${route.path}`;
  return 'unmatched';
}

/** Times every request (tollgate_http_request_duration_seconds) and counts rate-limit refusals. */
export function httpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const end = metrics.httpDuration.startTimer();
    // 'close' also fires when the caller hangs up before the answer is complete.
    res.once('close', () => {
      const route = routeOf(req);
      end({ method: req.method, route, status: String(res.statusCode) });
      if (res.statusCode === 429) metrics.rateLimited.inc({ route });
    });
    next();
  };
}
