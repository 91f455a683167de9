import type { RequestListener } from 'node:http';
import type { Registry } from 'prom-client';

/**
 * The Prometheus listener's handler (METRICS_PORT on HOST): GET /metrics in the text format,
 * nothing else. Separate from the API port so that it can stay inside the operators' network.
 */
export function metricsHandler(registry: Registry): RequestListener {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ detail: 'Not Found: metrics are at GET /metrics' }));
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`# metrics collection failed: ${err.message}\n`),
    );
  };
}
