import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import express from 'express';
import { createInferenceModule } from '../../src/inference/module';
import { errorHandler, notFoundHandler } from '../../src/platform/http/middleware/errors';
import type { Services } from '../../src/services';
import type { Proc, World } from './world';

/**
 * One api process: the production inference routes (the inference module's router, its
 * Idempotency-Key middleware, the error mapper) served in-process. A caller's HTTP request becomes
 * a request object handed to the Express app; the answer is collected from the response object.
 * No socket: nothing here waits on real I/O.
 */

export interface HttpAnswer {
  kind: 'answer';
  status: number;
  headers: Record<string, string>;
  body: string;
}
export type CallOutcome = HttpAnswer | { kind: 'gave_up' } | { kind: 'reset' };

export interface HttpCall {
  method: 'POST';
  path: string;
  headers: Record<string, string>;
  body: unknown;
  /** The caller stops waiting (closes the connection) after this many virtual ms. */
  giveUpAfterMs?: number;
}

export class ApiProcess {
  readonly app: express.Express;
  private readonly open = new Set<(o: CallOutcome) => void>();

  constructor(
    readonly world: World,
    readonly proc: Proc,
    readonly s: Services,
    idempotencyLeaseMs: number,
  ) {
    const inference = createInferenceModule({ backend: s.model(), search: null, idempotencyLeaseMs });
    const app = express();
    app.use(inference.router!(s, [inference]));
    app.use(notFoundHandler);
    app.use(inference.errorMiddleware!());
    app.use(errorHandler(s.log));
    this.app = app;
    proc.onCrash.push(() => {
      for (const done of [...this.open]) done({ kind: 'reset' });
      this.open.clear();
    });
  }

  /** One HTTP exchange, run as this process. */
  call(c: HttpCall, caller: Proc): Promise<CallOutcome> {
    return new Promise<CallOutcome>((resolve) => {
      if (this.proc.dead) return resolve({ kind: 'reset' });
      let settled = false;
      const done = (o: CallOutcome) => {
        if (settled) return;
        settled = true;
        this.open.delete(done);
        resolve(o);
      };
      this.open.add(done);
      const socket = new Socket();
      const req = new IncomingMessage(socket);
      req.method = c.method;
      req.url = c.path;
      req.headers = Object.fromEntries(
        Object.entries({ 'content-type': 'application/json', ...c.headers }).map(([k, v]) => [k.toLowerCase(), v]),
      );
      (req as unknown as { body: unknown }).body = c.body;
      const res = new ServerResponse(req);
      const chunks: string[] = [];
      const r = res as any;
      const text = (chunk: unknown, enc?: unknown) =>
        chunk === undefined || chunk === null || typeof chunk === 'function'
          ? ''
          : Buffer.isBuffer(chunk)
            ? chunk.toString('utf8')
            : Buffer.from(String(chunk), typeof enc === 'string' ? (enc as BufferEncoding) : 'utf8').toString('utf8');
      let gone = false;
      r.write = (chunk: unknown, enc?: unknown) => {
        if (gone || r.finished) return false;
        if (!r._header) (r as unknown as { _implicitHeader(): void })._implicitHeader();
        chunks.push(text(chunk, enc));
        return true;
      };
      r.end = (chunk?: unknown, enc?: unknown) => {
        if (r.finished) return res;
        if (!gone && !r._header) (r as unknown as { _implicitHeader(): void })._implicitHeader();
        if (!gone) chunks.push(text(chunk, enc));
        r.finished = true;
        r.outputData = [];
        r.outputSize = 0;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.getHeaders())) if (v !== undefined) headers[k] = String(v);
        if (!gone) done({ kind: 'answer', status: res.statusCode, headers, body: chunks.join('') });
        res.emit('finish');
        res.emit('close');
        return res;
      };
      if (c.giveUpAfterMs !== undefined) {
        this.world.within(caller, () =>
          setTimeout(() => {
            if (settled || r.finished) return;
            gone = true;
            r.destroyed = true;
            done({ kind: 'gave_up' });
            this.world.within(this.proc, () => res.emit('close'));
          }, c.giveUpAfterMs),
        );
      }
      this.world.within(this.proc, () =>
        (this.app as unknown as { handle(q: unknown, s: unknown, next: (e?: unknown) => void): void }).handle(req, res, (err?: unknown) => {
          if (!settled) done({ kind: 'answer', status: err ? 500 : 404, headers: {}, body: '' });
        }),
      );
    });
  }
}
