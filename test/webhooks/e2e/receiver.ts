import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A webhook receiver on 127.0.0.1 that verifies every delivery with the standardwebhooks package. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  verified: boolean;
  /** The status answered, 0 for a request held open. */
  answered: number;
}

export class Receiver {
  received: Received[] = [];
  secret = '';
  /** How to answer the n-th request for an event id (0-based); null holds the request open, unanswered. */
  constructor(public answer: (nth: number) => number | null) {}
  private server!: Server;
  url = '';
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        let verified: boolean;
        try {
          new Webhook(this.secret).verify(body, req.headers as Record<string, string>);
          verified = true;
        } catch {
          verified = false;
        }
        const id = String(req.headers['webhook-id']);
        const nth = this.received.filter((r) => r.headers['webhook-id'] === id).length;
        const answered = this.answer(nth);
        this.received.push({ headers: req.headers, body, verified, answered: answered ?? 0 });
        if (answered === null) return;
        res.statusCode = answered;
        res.end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }
  close = () =>
    new Promise<void>((r) => {
      this.server.close(() => r());
      this.server.closeAllConnections();
    });
}
