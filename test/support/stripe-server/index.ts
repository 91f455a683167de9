import { createHmac, randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { testCardResponse, TEST_CARDS, TestCard } from '../../../src/billing/payments/test-cards';

/**
 * A local server speaking Stripe's wire format for the endpoints tollgate uses, so the stripe
 * adapter is tested through the real SDK (stripe-mock is not available here). It keeps its state in
 * memory and covers:
 *
 *   POST /v1/customers, GET|POST /v1/customers/:id
 *   POST /v1/payment_methods/:id/attach, GET /v1/payment_methods/:id
 *   POST /v1/payment_intents, GET /v1/payment_intents (list), GET /v1/payment_intents/:id,
 *   POST /v1/payment_intents/:id/confirm, POST /v1/payment_intents/:id/cancel
 *
 * Requests are form-encoded (a[b]=c, a[0]=c), answers JSON; errors are
 * {"error": {type, code, decline_code, message, payment_intent}} with 402 for card errors.
 * Idempotency-Key: a replay returns the first answer (header Idempotent-Replayed: true), the same key
 * with other parameters is refused (400 idempotency_error), a key still in progress answers 409.
 * Test cards: Stripe's pm_card_* ids (src/billing/payments/test-cards.ts).
 *
 * Faults, injected per request: '500' (answers 500, processes nothing), 'timeout' (processes
 * nothing, never answers), 'lost' (processes the request, saves its idempotent answer, then drops
 * the connection: the charge was made and the caller never hears of it).
 *
 * Webhooks: with `webhook: {url, secret}`, each PaymentIntent that ends (succeeded, failed,
 * requires_action) is sent as a signed event, like Stripe's.
 */

export type Fault = '500' | 'timeout' | 'lost';

export interface RequestInfo {
  method: string;
  path: string;
  idempotencyKey?: string;
  params: Record<string, unknown>;
}

export interface LoggedRequest extends RequestInfo {
  status: number | null;
  fault?: Fault;
  replayed?: boolean;
}

export interface StripeObject {
  id: string;
  object: string;
  [k: string]: unknown;
}

export interface PaymentIntentObject extends StripeObject {
  amount: number;
  amount_received: number;
  currency: string;
  customer: string | null;
  payment_method: string | null;
  status: string;
  metadata: Record<string, string>;
  created: number;
  last_payment_error: Record<string, unknown> | null;
}

export interface WebhookEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  livemode: false;
  pending_webhooks: number;
  type: string;
  request: { id: string | null; idempotency_key: string | null };
  data: { object: Record<string, unknown> };
}

export interface StripeWireServerOptions {
  /** Accepted secret key (any sk_… when unset). */
  apiKey?: string;
  webhook?: { url: string; secret: string };
  /** Seed for the fault dice, so a failing run can be replayed. */
  seed?: number;
  /** How long a 'timeout' fault holds the connection at most (the client normally gives up first). */
  holdMs?: number;
}

interface IdemEntry {
  fingerprint: string;
  state: 'in_progress' | 'done';
  status?: number;
  body?: string;
}

const API_VERSION = '2026-01-28';

export class StripeWireServer {
  readonly customers = new Map<string, StripeObject>();
  readonly paymentMethods = new Map<string, StripeObject & { template: string }>();
  readonly paymentIntents = new Map<string, PaymentIntentObject>();
  /** Refunds (POST /v1/refunds), by id. */
  readonly refunds = new Map<string, StripeObject & { payment_intent: string; amount: number }>();
  readonly events: WebhookEvent[] = [];
  readonly log: LoggedRequest[] = [];
  private readonly idem = new Map<string, IdemEntry>();
  private readonly forced: Array<{ fault: Fault; count: number; match: (r: RequestInfo) => boolean }> = [];
  private faultRate = 0;
  private faultKinds: Fault[] = ['500', 'timeout', 'lost'];
  private faultMatch: (r: RequestInfo) => boolean = () => true;
  private rng: () => number;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private webhookChain: Promise<void> = Promise.resolve();
  /** Called after a PaymentIntent was charged (or refused), before the answer is written. */
  onProcessed: ((pi: PaymentIntentObject, req: RequestInfo) => Promise<void> | void) | null = null;
  url = '';
  port = 0;

  constructor(readonly opts: StripeWireServerOptions = {}) {
    this.rng = mulberry32(opts.seed ?? 0x5eed);
  }

  async start(port = 0): Promise<this> {
    // A client that went away mid-request (an SDK retry, a killed process) must not fail the test process.
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    await this.webhookChain.catch(() => undefined);
  }

  /** Where (and signed with which secret) finished PaymentIntents are announced; null stops it. */
  setWebhook(webhook: { url: string; secret: string } | null): void {
    (this.opts as { webhook?: { url: string; secret: string } }).webhook = webhook ?? undefined;
  }

  // ----- faults

  /** The next `count` requests that match fail with `fault`. */
  failNext(fault: Fault, opts: { count?: number; match?: (r: RequestInfo) => boolean } = {}): void {
    this.forced.push({ fault, count: opts.count ?? 1, match: opts.match ?? (() => true) });
  }

  /** Every matching request fails with probability `rate`, with one of `kinds`. */
  setFaultRate(rate: number, kinds: Fault[] = ['500', 'timeout', 'lost'], match: (r: RequestInfo) => boolean = () => true): void {
    this.faultRate = rate;
    this.faultKinds = kinds;
    this.faultMatch = match;
  }

  clearFaults(): void {
    this.forced.length = 0;
    this.faultRate = 0;
  }

  private pickFault(r: RequestInfo): Fault | undefined {
    for (const f of this.forced) {
      if (f.count > 0 && f.match(r)) {
        f.count--;
        return f.fault;
      }
    }
    if (this.faultRate > 0 && this.faultMatch(r) && this.rng() < this.faultRate) {
      return this.faultKinds[Math.floor(this.rng() * this.faultKinds.length)];
    }
    return undefined;
  }

  // ----- figures

  /** PaymentIntents that took money. */
  succeededCharges(): PaymentIntentObject[] {
    return [...this.paymentIntents.values()].filter((pi) => pi.status === 'succeeded');
  }

  faultsInjected(): Record<Fault, number> {
    const out: Record<Fault, number> = { '500': 0, timeout: 0, lost: 0 };
    for (const r of this.log) if (r.fault) out[r.fault]++;
    return out;
  }

  // ----- webhooks

  /** Signs a payload the way Stripe does: Stripe-Signature: t=<unix>,v1=<HMAC-SHA256 of "t.payload">. */
  static sign(payload: string, secret: string, t = Math.floor(Date.now() / 1000)): string {
    const v1 = createHmac('sha256', secret).update(`${t}.${payload}`, 'utf8').digest('hex');
    return `t=${t},v1=${v1}`;
  }

  /** Builds an event for a PaymentIntent in its current state (or a given one). */
  eventFor(pi: PaymentIntentObject, type?: string, snapshot?: Record<string, unknown>): WebhookEvent {
    const t =
      type ??
      (pi.status === 'succeeded'
        ? 'payment_intent.succeeded'
        : pi.status === 'requires_action'
          ? 'payment_intent.requires_action'
          : pi.status === 'canceled'
            ? 'payment_intent.canceled'
            : 'payment_intent.payment_failed');
    const e: WebhookEvent = {
      id: `evt_${rid()}`,
      object: 'event',
      api_version: API_VERSION,
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      type: t,
      request: { id: `req_${rid()}`, idempotency_key: null },
      data: { object: JSON.parse(JSON.stringify(snapshot ?? pi)) },
    };
    this.events.push(e);
    return e;
  }

  /** POSTs an event to the webhook url, signed; resolves with the endpoint's HTTP status. */
  async deliver(e: WebhookEvent, opts: { secret?: string; url?: string } = {}): Promise<number> {
    const url = opts.url ?? this.opts.webhook?.url;
    const secret = opts.secret ?? this.opts.webhook?.secret;
    if (!url || !secret) throw new Error('no webhook url/secret configured');
    const payload = JSON.stringify(e, null, 2);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': StripeWireServer.sign(payload, secret) },
      body: payload,
    });
    await res.arrayBuffer();
    return res.status;
  }

  /** Waits until the automatic webhook deliveries queued so far were sent. */
  async webhooksSent(): Promise<void> {
    await this.webhookChain;
  }

  private emit(pi: PaymentIntentObject): void {
    if (!this.opts.webhook) return;
    const e = this.eventFor(pi);
    this.webhookChain = this.webhookChain.then(() =>
      this.deliver(e).then(
        () => undefined,
        () => undefined,
      ),
    );
  }

  // ----- HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    const params = parseForm(method === 'GET' || method === 'DELETE' ? url.search.slice(1) : body);
    const idempotencyKey = header(req, 'idempotency-key');
    const info: RequestInfo = { method, path: url.pathname, idempotencyKey, params };
    const entry: LoggedRequest = { ...info, status: null };
    this.log.push(entry);

    const auth = header(req, 'authorization') ?? '';
    const key = auth.replace(/^Bearer\s+/i, '');
    if (!key.startsWith('sk_') || (this.opts.apiKey && key !== this.opts.apiKey)) {
      return this.send(res, entry, 401, errorBody('invalid_request_error', 'Invalid API Key provided'));
    }

    const fault = this.pickFault(info);
    entry.fault = fault;
    if (fault === '500') {
      return this.send(res, entry, 500, errorBody('api_error', 'An unknown error occurred (injected fault)'));
    }
    if (fault === 'timeout') {
      // Processes nothing and never answers; the client's timeout ends it.
      const t = setTimeout(() => req.socket.destroy(), this.opts.holdMs ?? 60_000);
      req.socket.once('close', () => clearTimeout(t));
      return;
    }

    let status: number;
    let out: unknown;
    const fingerprint = `${method} ${url.pathname} ${canonical(params)}`;
    const idem = method === 'POST' && idempotencyKey ? this.idem.get(idempotencyKey) : undefined;
    if (idem) {
      if (idem.fingerprint !== fingerprint) {
        return this.send(
          res,
          entry,
          400,
          errorBody(
            'idempotency_error',
            `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
          ),
        );
      }
      if (idem.state === 'in_progress') {
        return this.send(res, entry, 409, {
          error: {
            type: 'idempotency_error',
            code: 'idempotency_key_in_use',
            message:
              'There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): ' +
              idempotencyKey,
          },
        });
      }
      entry.replayed = true;
      if (fault === 'lost') return void req.socket.destroy();
      return this.sendRaw(res, entry, idem.status!, idem.body!, { 'Idempotent-Replayed': 'true' });
    }
    const record = method === 'POST' && idempotencyKey ? { fingerprint, state: 'in_progress' as const } : null;
    if (record) this.idem.set(idempotencyKey!, record);
    try {
      [status, out] = await this.route(method, url.pathname, params, info);
    } catch (err) {
      if (record) this.idem.delete(idempotencyKey!);
      return this.send(res, entry, 500, errorBody('api_error', (err as Error).message));
    }
    const text = JSON.stringify(out, null, 2);
    // Like Stripe: an answer is saved for replay once the endpoint ran (200s and card errors);
    // a refused parameter check is not.
    if (record) {
      if (status < 400 || status === 402) this.idem.set(idempotencyKey!, { fingerprint, state: 'done', status, body: text });
      else this.idem.delete(idempotencyKey!);
    }
    if (fault === 'lost') {
      entry.status = null;
      return void req.socket.destroy();
    }
    this.sendRaw(res, entry, status, text);
  }

  private send(res: ServerResponse, entry: LoggedRequest, status: number, body: unknown): void {
    this.sendRaw(res, entry, status, JSON.stringify(body, null, 2));
  }

  private sendRaw(res: ServerResponse, entry: LoggedRequest, status: number, text: string, headers: Record<string, string> = {}): void {
    entry.status = status;
    if (res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'request-id': `req_${rid()}`,
      'stripe-version': API_VERSION,
      ...headers,
    });
    res.end(text);
  }

  private async route(method: string, path: string, p: Record<string, unknown>, info: RequestInfo): Promise<[number, unknown]> {
    const seg = path.split('/').filter(Boolean); // ['v1', 'payment_intents', id, 'confirm']
    if (seg[0] !== 'v1') return [404, errorBody('invalid_request_error', `Unrecognized request URL (${method}: ${path})`)];
    const [, res, id, action] = seg;
    if (res === 'customers') {
      if (method === 'POST' && !id) return this.createCustomer(p);
      const c = id ? this.customers.get(id) : undefined;
      if (!c) return missing('customer', id);
      if (method === 'GET') return [200, c];
      if (method === 'POST' && !action) return this.updateCustomer(c, p);
    }
    if (res === 'payment_methods' && id) {
      if (method === 'POST' && action === 'attach') return this.attach(id, p);
      if (method === 'GET' && !action) {
        const pm = this.paymentMethods.get(id);
        return pm ? [200, publicPm(pm)] : missing('payment_method', id);
      }
    }
    if (res === 'refunds') {
      if (method === 'POST' && !id) return this.createRefund(p);
      const r = id ? this.refunds.get(id) : undefined;
      if (method === 'GET' && r && !action) return [200, r];
      if (method === 'GET' && id) return missing('refund', id);
    }
    if (res === 'payment_intents') {
      if (method === 'POST' && !id) return this.createIntent(p, info);
      if (method === 'GET' && !id) return this.listIntents(p);
      const pi = id ? this.paymentIntents.get(id) : undefined;
      if (!pi) return missing('payment_intent', id);
      if (method === 'GET' && !action) return [200, pi];
      if (method === 'POST' && action === 'confirm') return this.confirm(pi, p, info);
      if (method === 'POST' && action === 'cancel') return this.cancel(pi);
    }
    return [404, errorBody('invalid_request_error', `Unrecognized request URL (${method}: ${path})`)];
  }

  /** Like Stripe's: a succeeded PaymentIntent, at most what it has not refunded (all of it when `amount` is absent). */
  private createRefund(p: Record<string, unknown>): [number, unknown] {
    const piId = p.payment_intent as string | undefined;
    if (!piId)
      return [400, errorBody('invalid_request_error', 'Missing required param: payment_intent.', 'parameter_missing', 'payment_intent')];
    const pi = this.paymentIntents.get(piId);
    if (!pi) return missing('payment_intent', piId, 'payment_intent');
    if (pi.status !== 'succeeded') {
      return [
        400,
        errorBody(
          'invalid_request_error',
          `This PaymentIntent (${piId}) does not have a successful charge to refund.`,
          'charge_not_refundable',
        ),
      ];
    }
    let refunded = 0;
    for (const r of this.refunds.values()) if (r.payment_intent === piId && r.status === 'succeeded') refunded += r.amount;
    const left = pi.amount_received - refunded;
    if (left <= 0)
      return [400, errorBody('invalid_request_error', `Charge for ${piId} has already been refunded.`, 'charge_already_refunded')];
    const amount = p.amount === undefined ? left : Number(p.amount);
    if (!Number.isInteger(amount) || (p.amount !== undefined && String(p.amount) !== String(amount)) || amount <= 0) {
      return [400, errorBody('invalid_request_error', 'Invalid integer: amount', 'parameter_invalid_integer', 'amount')];
    }
    if (amount > left) {
      return [
        400,
        errorBody(
          'invalid_request_error',
          `Refund amount ($${(amount / 100).toFixed(2)}) is greater than unrefunded amount on charge ($${(left / 100).toFixed(2)})`,
          'amount_too_large',
          'amount',
        ),
      ];
    }
    const r = {
      id: `re_${rid()}`,
      object: 'refund',
      amount,
      currency: 'usd',
      payment_intent: piId,
      status: 'succeeded',
      metadata: (p.metadata as Record<string, string>) ?? {},
      created: now(),
    };
    this.refunds.set(r.id, r);
    return [200, r];
  }

  private createCustomer(p: Record<string, unknown>): [number, unknown] {
    const c: StripeObject = {
      id: `cus_${rid()}`,
      object: 'customer',
      created: now(),
      description: (p.description as string) ?? null,
      email: (p.email as string) ?? null,
      metadata: (p.metadata as Record<string, string>) ?? {},
      invoice_settings: { default_payment_method: null },
      livemode: false,
    };
    this.customers.set(c.id, c);
    return [200, c];
  }

  private updateCustomer(c: StripeObject, p: Record<string, unknown>): [number, unknown] {
    const inv = p.invoice_settings as Record<string, string> | undefined;
    if (inv?.default_payment_method !== undefined) {
      const pm = this.paymentMethods.get(inv.default_payment_method);
      if (!pm) return missing('payment_method', inv.default_payment_method, 'invoice_settings[default_payment_method]');
      if (pm.customer !== c.id) {
        return [
          400,
          errorBody('invalid_request_error', `The PaymentMethod ${pm.id} is not attached to customer ${c.id}`, 'resource_missing'),
        ];
      }
      c.invoice_settings = { default_payment_method: pm.id };
    }
    if (p.metadata) c.metadata = { ...(c.metadata as object), ...(p.metadata as object) };
    return [200, c];
  }

  private attach(id: string, p: Record<string, unknown>): [number, unknown] {
    const customer = p.customer as string | undefined;
    if (!customer) return [400, errorBody('invalid_request_error', 'Missing required param: customer.', 'parameter_missing', 'customer')];
    if (!this.customers.has(customer)) return missing('customer', customer, 'customer');
    let pm = this.paymentMethods.get(id);
    if (!pm) {
      const card = TEST_CARDS[id];
      if (!card) return missing('payment_method', id, 'payment_method');
      // Like Stripe: a magic test id becomes a new PaymentMethod when it is attached.
      pm = makePm(id, card);
      this.paymentMethods.set(pm.id, pm);
    }
    if (pm.customer && pm.customer !== customer) {
      return [400, errorBody('invalid_request_error', `The payment method ${pm.id} is already attached to another customer.`)];
    }
    pm.customer = customer;
    return [200, publicPm(pm)];
  }

  private resolvePm(id: string): (StripeObject & { template: string }) | null {
    const pm = this.paymentMethods.get(id);
    if (pm) return pm;
    const card = TEST_CARDS[id];
    if (!card) return null;
    const fresh = makePm(id, card);
    this.paymentMethods.set(fresh.id, fresh);
    return fresh;
  }

  private createIntent(p: Record<string, unknown>, info: RequestInfo): Promise<[number, unknown]> | [number, unknown] {
    const amount = Number(p.amount);
    if (!Number.isInteger(amount) || String(p.amount) !== String(amount)) {
      return [400, errorBody('invalid_request_error', 'Invalid integer: amount', 'parameter_invalid_integer', 'amount')];
    }
    if (amount < 50) return [400, errorBody('invalid_request_error', 'Amount must be at least $0.50 usd', 'amount_too_small', 'amount')];
    if (amount > 99_999_999)
      return [400, errorBody('invalid_request_error', 'Amount must be no more than $999,999.99', 'amount_too_large', 'amount')];
    if (p.currency !== 'usd') return [400, errorBody('invalid_request_error', 'Invalid currency', 'parameter_invalid_empty', 'currency')];
    const customer = (p.customer as string) ?? null;
    if (customer && !this.customers.has(customer)) return missing('customer', customer, 'customer');
    const pi: PaymentIntentObject = {
      id: `pi_${rid()}`,
      object: 'payment_intent',
      amount,
      amount_received: 0,
      currency: 'usd',
      customer,
      payment_method: null,
      status: 'requires_payment_method',
      metadata: (p.metadata as Record<string, string>) ?? {},
      description: (p.description as string) ?? null,
      created: now(),
      livemode: false,
      capture_method: 'automatic',
      confirmation_method: 'automatic',
      client_secret: '',
      last_payment_error: null,
      next_action: null,
      latest_charge: null,
    };
    pi.client_secret = `${pi.id}_secret_${rid()}`;
    if (p.payment_method) {
      const pm = this.resolvePm(p.payment_method as string);
      if (!pm) return missing('payment_method', p.payment_method as string, 'payment_method');
      if (pm.customer && customer && pm.customer !== customer) {
        return [400, errorBody('invalid_request_error', `The PaymentMethod ${pm.id} does not belong to the Customer ${customer}.`)];
      }
      pi.payment_method = pm.id;
      pi.status = 'requires_confirmation';
    }
    this.paymentIntents.set(pi.id, pi);
    if (truthy(p.confirm)) return this.confirm(pi, p, info);
    return [200, pi];
  }

  private async confirm(pi: PaymentIntentObject, p: Record<string, unknown>, info: RequestInfo): Promise<[number, unknown]> {
    if (p.payment_method && info.path.endsWith('/confirm')) {
      const pm = this.resolvePm(p.payment_method as string);
      if (!pm) return missing('payment_method', p.payment_method as string, 'payment_method');
      pi.payment_method = pm.id;
    }
    if (!['requires_confirmation', 'requires_payment_method', 'requires_action'].includes(pi.status)) {
      return [
        400,
        errorBody(
          'invalid_request_error',
          `This PaymentIntent's status is ${pi.status}; it cannot be confirmed.`,
          'payment_intent_unexpected_state',
        ),
      ];
    }
    const pm = pi.payment_method ? this.paymentMethods.get(pi.payment_method) : undefined;
    if (!pm)
      return [
        400,
        errorBody(
          'invalid_request_error',
          'You must provide a payment_method to confirm this PaymentIntent.',
          'payment_intent_unexpected_state',
        ),
      ];
    const card = TEST_CARDS[pm.template];
    const offSession = truthy(p.off_session);
    const outcome = testCardResponse(card, offSession);
    let result: [number, unknown];
    if (outcome === null) {
      pi.status = 'succeeded';
      pi.amount_received = pi.amount;
      pi.latest_charge = `ch_${rid()}`;
      pi.last_payment_error = null;
      result = [200, pi];
    } else if (outcome === 'requires_action') {
      pi.status = 'requires_action';
      pi.next_action = { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } };
      result = [200, pi];
    } else {
      const err = {
        type: 'card_error',
        code: outcome.code,
        decline_code: outcome.declineCode,
        message: outcome.message,
        payment_method: publicPm(pm),
      };
      pi.status = 'requires_payment_method';
      pi.last_payment_error = err;
      pi.latest_charge = `ch_${rid()}`;
      result = [
        402,
        { error: { ...err, charge: pi.latest_charge, payment_intent: pi, doc_url: `https://stripe.com/docs/error-codes/${outcome.code}` } },
      ];
    }
    await this.onProcessed?.(pi, info);
    this.emit(pi);
    return result;
  }

  private cancel(pi: PaymentIntentObject): [number, unknown] {
    if (pi.status === 'succeeded' || pi.status === 'canceled') {
      return [
        400,
        errorBody(
          'invalid_request_error',
          `You cannot cancel this PaymentIntent because it has a status of ${pi.status}.`,
          'payment_intent_unexpected_state',
        ),
      ];
    }
    pi.status = 'canceled';
    pi.canceled_at = now();
    pi.cancellation_reason = 'requested_by_customer';
    this.emit(pi);
    return [200, pi];
  }

  private listIntents(p: Record<string, unknown>): [number, unknown] {
    const limit = Math.min(Math.max(Number(p.limit ?? 10), 1), 100);
    let all = [...this.paymentIntents.values()].reverse(); // newest first, like Stripe
    if (p.customer) all = all.filter((pi) => pi.customer === p.customer);
    let start = 0;
    if (p.starting_after) start = all.findIndex((pi) => pi.id === p.starting_after) + 1;
    const data = all.slice(start, start + limit);
    return [200, { object: 'list', url: '/v1/payment_intents', has_more: start + limit < all.length, data }];
  }
}

// ----- helpers

function makePm(template: string, card: TestCard): StripeObject & { template: string } {
  return {
    id: `pm_${rid()}`,
    object: 'payment_method',
    type: 'card',
    created: now(),
    customer: null,
    livemode: false,
    billing_details: { address: null, email: null, name: null, phone: null },
    card: {
      brand: card.brand,
      last4: card.last4,
      exp_month: 12,
      exp_year: new Date().getUTCFullYear() + 3,
      country: 'US',
      funding: 'credit',
    },
    template,
  };
}

function publicPm(pm: StripeObject & { template: string }): StripeObject {
  const { template: _t, ...rest } = pm;
  return rest;
}

function missing(kind: string, id: string | undefined, param?: string): [number, unknown] {
  return [
    kind === 'payment_intent' ? 404 : 400,
    errorBody('invalid_request_error', `No such ${kind}: '${id ?? ''}'`, 'resource_missing', param ?? 'id'),
  ];
}

function errorBody(type: string, message: string, code?: string, param?: string) {
  return { error: { type, message, ...(code ? { code } : {}), ...(param ? { param } : {}) } };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Parses Stripe's form encoding: a=1&b[c]=2&d[0]=x → {a:'1', b:{c:'2'}, d:['x']}. */
export function parseForm(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!text) return out;
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const i = pair.indexOf('=');
    const rawKey = decodeURIComponent((i < 0 ? pair : pair.slice(0, i)).replace(/\+/g, ' '));
    const value = i < 0 ? '' : decodeURIComponent(pair.slice(i + 1).replace(/\+/g, ' '));
    const path = rawKey.split(/\[|\]\[|\]/).filter((s, idx) => idx === 0 || s !== '');
    let node: Record<string, unknown> = out;
    for (let k = 0; k < path.length - 1; k++) {
      const seg = path[k];
      const nextIsIndex = /^\d+$/.test(path[k + 1]);
      if (node[seg] === undefined) node[seg] = nextIsIndex ? [] : {};
      node = node[seg] as Record<string, unknown>;
    }
    node[path[path.length - 1]] = value;
  }
  return out;
}

function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

const truthy = (v: unknown) => v === true || v === 'true';
const now = () => Math.floor(Date.now() / 1000);
const rid = () => randomBytes(12).toString('base64url').replace(/[-_]/g, 'x');

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
