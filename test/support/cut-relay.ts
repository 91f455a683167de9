/**
 * A TCP relay that cuts its connections at a chosen moment of one request, to make an append's outcome
 * unknown to the client:
 *  - 'after-commit': the request goes through, the server does it (and commits), and the connection is
 *    cut as the reply starts to come back: the reply is never delivered;
 *  - 'before-send': the request is swallowed and the connection cut: the server never sees it.
 * `protocol: 'h2'` (gRPC) cuts on the first HTTP/2 HEADERS or DATA frame from the server, so that
 * connection housekeeping (SETTINGS, PING, WINDOW_UPDATE) passes; 'raw' (PostgreSQL) cuts on the first
 * byte back (the server flushes its reply only after COMMIT, at ReadyForQuery).
 */
import { connect, createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

type Mode = 'after-commit' | 'before-send';

export class CutRelay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  /** What the next matching requests get, in order (see arm). */
  private armed: Array<{ mode: Mode; when: (chunk: Buffer) => boolean }> = [];
  private stalled = false;
  /** What clients sent while stalled: never delivered. */
  readonly held: Buffer[] = [];
  /** How many connections were cut (the test checks the cut did happen). */
  cuts = 0;
  port = 0;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly protocol: 'raw' | 'h2' = 'raw',
  ) {}

  async listen(): Promise<void> {
    this.server = createServer((client) => this.pair(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /**
   * The next request sent on any connection is cut as `mode` says; after that, the relay passes
   * everything. With `when`, only a request whose bytes it accepts is cut (the others pass); `times`
   * cuts that many matching requests (a request's retries, say).
   */
  arm(mode: Mode, opts: { when?: (chunk: Buffer) => boolean; times?: number } = {}): void {
    for (let i = 0; i < (opts.times ?? 1); i++) this.armed.push({ mode, when: opts.when ?? (() => true) });
  }

  disarm(): void {
    this.armed = [];
  }

  /** From now on nothing clients send reaches the server (kept in `held`), as on a network that stalls. */
  stall(): void {
    this.stalled = true;
  }

  private pair(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    let cutOnReply = false;
    let pending = Buffer.alloc(0); // h2: bytes of an incomplete frame from the server
    const cut = () => {
      this.cuts++;
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      if (this.stalled) {
        this.held.push(chunk);
        return;
      }
      const next = this.armed[0];
      if (next?.when(chunk)) {
        this.armed.shift();
        if (next.mode === 'before-send') return cut();
        cutOnReply = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!cutOnReply) {
        client.write(chunk);
        return;
      }
      if (this.protocol === 'raw') return cut();
      pending = Buffer.concat([pending, chunk]);
      let pass = 0;
      while (pending.length - pass >= 9) {
        const length = pending.readUIntBE(pass, 3);
        const type = pending[pass + 3];
        if (type === 0x0 || type === 0x1) {
          if (pass > 0) client.write(pending.subarray(0, pass));
          return cut();
        }
        if (pending.length - pass < 9 + length) break;
        pass += 9 + length;
      }
      if (pass > 0) client.write(pending.subarray(0, pass));
      pending = pending.subarray(pass);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
