import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric tollgate exports, on one registry per process (built in buildServices, never a
 * module-level singleton, so tests and several services in one process stay apart).
 *
 * Labels are bounded sets: route templates (not paths), configs, endpoints, finish reasons,
 * projection and queue names, outcomes. Never a key, workspace or request id.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'tollgate_http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'tollgate_rate_limit_refusals_total',
    help: 'Inference requests refused with 429 by the per-key rate limit',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

  readonly inferenceRequests = new Counter({
    name: 'tollgate_inference_requests_total',
    help: 'Inference requests that ran, by config, endpoint and finish reason (recorded="false": the completion could not be written)',
    labelNames: ['config', 'endpoint', 'finish_reason', 'recorded'] as const,
    registers: [this.registry],
  });

  readonly inferenceTokens = new Counter({
    name: 'tollgate_inference_tokens_total',
    help: 'Billed tokens, by config and direction (input or output)',
    labelNames: ['config', 'direction'] as const,
    registers: [this.registry],
  });

  readonly debited = new Counter({
    name: 'tollgate_debited_nano_usd_total',
    help: 'Nano-USD debited for inference, by config (exact in the ledger; a float here)',
    labelNames: ['config'] as const,
    registers: [this.registry],
  });

  readonly appendDuration = new Histogram({
    name: 'tollgate_eventstore_append_duration_seconds',
    help: 'Event-store append latency, by outcome (ok, conflict, unavailable, error)',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [this.registry],
  });

  readonly groupCommitSize = new Histogram({
    name: 'tollgate_eventstore_group_commit_size',
    help: 'Appends that completed together in one event-loop turn (SQLite: one transaction and fsync)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });

  readonly payments = new Counter({
    name: 'tollgate_payments_total',
    help: 'Charges sent to the payment gateway, by gateway, kind (deposit or reload) and outcome',
    labelNames: ['gateway', 'kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly projectionStateLost = new Counter({
    name: 'tollgate_projection_state_lost_total',
    help: 'Times the projector found a read model gone from Redis and rebuilt it from the event store',
    labelNames: ['projection'] as const,
    registers: [this.registry],
  });

  readonly sweeperClosed = new Counter({
    name: 'tollgate_sweeper_actions_total',
    help: 'What the sweeper did with open reservations (released, closed, waiting)',
    labelNames: ['action'] as const,
    registers: [this.registry],
  });

  constructor() {
    // Unprefixed (process_cpu_seconds_total, nodejs_heap_size_used_bytes…), as stock Node dashboards expect.
    collectDefaultMetrics({ register: this.registry });
  }

  /** One inference request's outcome and, when it was recorded, what it billed. */
  inferenceFinished(o: {
    config: string;
    endpoint: string;
    finishReason: string;
    recorded: boolean;
    inputTokens: number;
    outputTokens: number;
    amountNanoUsd: string;
  }): void {
    this.inferenceRequests.inc({ config: o.config, endpoint: o.endpoint, finish_reason: o.finishReason, recorded: String(o.recorded) });
    if (!o.recorded) return;
    this.inferenceTokens.inc({ config: o.config, direction: 'input' }, o.inputTokens);
    this.inferenceTokens.inc({ config: o.config, direction: 'output' }, o.outputTokens);
    this.debited.inc({ config: o.config }, Number(o.amountNanoUsd));
  }

  /** A gauge whose values are read when Prometheus scrapes (lag, queue depth, open reservations). */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[], collect: (g: Gauge<L>) => Promise<void>): Gauge<L> {
    const existing = this.registry.getSingleMetric(name);
    if (existing) this.registry.removeSingleMetric(name);
    return new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        this.reset();
        // A scrape must answer even if one source is down: that gauge is left empty.
        await collect(this).catch(() => undefined);
      },
    });
  }
}
