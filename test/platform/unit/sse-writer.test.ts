import express from 'express';
import type { Socket } from 'node:net';
import { AddressInfo } from 'node:net';
import { EventStreamWriter, sseFrame } from '../../../src/platform/http/sse';

/** Socket writes (one per send to the kernel: a corked group is one) made by `socket` from now on. */
function countWrites(socket: Socket): () => number {
  const s = socket as unknown as { _writeGeneric: (...a: unknown[]) => unknown };
  const original = s._writeGeneric;
  let n = 0;
  s._writeGeneric = function (this: unknown, ...a: unknown[]) {
    n++;
    return original.apply(this, a);
  };
  return () => n;
}

async function serve(handler: express.RequestHandler): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.get('/', handler);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

test('the headers leave with the first frame, in one socket write', async () => {
  let writes = -1;
  const srv = await serve(async (_req, res) => {
    const count = countWrites(res.socket!);
    const w = new EventStreamWriter(res);
    await w.write(sseFrame({ a: 1 }));
    await new Promise((r) => setImmediate(r)); // a corked write goes out on the next tick
    writes = count();
    w.end();
  });
  try {
    const res = await fetch(srv.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(await res.text()).toBe('data: {"a":1}\n\n');
    expect(writes).toBe(1);
  } finally {
    await srv.close();
  }
});

test('start() and push() still send the headers at once, before any frame', async () => {
  let release!: () => void;
  const later = new Promise<void>((r) => (release = r));
  const srv = await serve(async (_req, res) => {
    const w = new EventStreamWriter(res);
    w.start();
    await later;
    w.end(sseFrame('bye'));
  });
  try {
    const res = await fetch(srv.url); // resolves on the headers: nothing else has been written
    expect(res.status).toBe(200);
    release();
    expect(await res.text()).toBe('data: bye\n\n');
  } finally {
    await srv.close();
  }
});
