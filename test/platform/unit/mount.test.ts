import express, { RequestHandler } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { route } from '../../../src/platform/http/contract';
import { errorHandler, HttpError } from '../../../src/platform/http/middleware/errors';
import { deferValidation, mount, ReadInput } from '../../../src/platform/http/mount';
import type { Logger } from '../../../src/platform/log';

/** mount: the method and path come from the contract, the middleware runs in order, then the input is checked and handed over typed. */

const thing = route({
  method: 'put',
  path: '/things/:id',
  summary: 'Put a thing',
  tags: ['test'],
  security: [],
  params: z.object({ id: z.string().regex(/^\d+$/) }),
  query: z.object({ n: z.coerce.number().int().default(1) }),
  headers: z.object({ 'X-Token': z.string().min(3), 'X-Note': z.string().optional() }),
  body: z.object({ name: z.string().min(1), tags: z.array(z.string()).default([]) }),
  responses: { 200: { description: 'ok' } },
});

const log = { warn: () => undefined, error: () => undefined } as unknown as Logger;
const good = { 'X-Token': 'abc' };

function app(mountRoutes: (r: express.Router) => void) {
  const a = express();
  a.use(express.json());
  const r = express.Router();
  mountRoutes(r);
  a.use(r);
  a.use((_req, res) => void res.status(404).json({ detail: 'Not Found' }));
  a.use(errorHandler(log));
  return a;
}

describe('mount', () => {
  const seen: string[] = [];
  const step =
    (name: string): RequestHandler =>
    (_req, _res, next) => {
      seen.push(name);
      next();
    };
  const server = app((r) =>
    mount(r, thing, step('first'), step('second'), (_req, res, input) => {
      seen.push('handler');
      // The output types, not the raw strings: a number from the query, the body's default filled in.
      const n: number = input.query.n;
      const tags: string[] = input.body.tags;
      const token: string = input.headers['X-Token'];
      res.json({ id: input.params.id, n, name: input.body.name, tags, token, note: input.headers['X-Note'] ?? null });
    }),
  );
  beforeEach(() => void (seen.length = 0));

  it('answers the contract’s method on the contract’s path, with the parsed input', async () => {
    const res = await request(server).put('/things/7?n=3').set(good).send({ name: 'a' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: '7', n: 3, name: 'a', tags: [], token: 'abc', note: null });
    expect(seen).toEqual(['first', 'second', 'handler']);
  });

  it('answers no other method on that path, and nothing on another path', async () => {
    for (const m of ['get', 'post', 'patch', 'delete'] as const) {
      expect((await request(server)[m]('/things/7').set(good).send({ name: 'a' })).status).toBe(404);
    }
    expect((await request(server).put('/thing/7').set(good).send({ name: 'a' })).status).toBe(404);
    expect(seen).toEqual([]);
  });

  it.each([
    ['a bad path', '/things/x', good, { name: 'a' }, [{ loc: ['path', 'id'], type: 'invalid_format' }]],
    ['a bad query', '/things/7?n=1.5', good, { name: 'a' }, [{ loc: ['query', 'n'], type: 'invalid_type' }]],
    ['a bad body', '/things/7', good, { name: '' }, [{ loc: ['body', 'name'], type: 'too_small' }]],
    ['a missing header', '/things/7', {}, { name: 'a' }, [{ loc: ['header', 'X-Token'], type: 'missing' }]],
    ['a bad header', '/things/7', { 'X-Token': 'ab' }, { name: 'a' }, [{ loc: ['header', 'X-Token'], type: 'too_small' }]],
    // Headers first, then path, query and body, each part alone: the first part that fails is the answer.
    ['the header before the body', '/things/7', {}, { name: '' }, [{ loc: ['header', 'X-Token'], type: 'missing' }]],
  ])(
    'refuses %s with 422 in FastAPI’s list format, after the middleware and before the handler',
    async (_what, url, headers, body, detail) => {
      const res = await request(server).put(url).set(headers).send(body);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(detail.map((d) => ({ ...d, msg: expect.any(String) })));
      expect(seen).toEqual(['first', 'second']);
    },
  );

  it('refuses a body that is not JSON by its Content-Type, in those words', async () => {
    const res = await request(server).put('/things/7').set(good).type('form').send('name=a');
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body'], msg: expect.stringMatching(/Content-Type: application\/json/), type: 'content_type' },
    ]);
  });

  it('lets a middleware answer before anything is validated', async () => {
    const guarded = app((r) =>
      mount(
        r,
        thing,
        () => {
          throw new HttpError(401, 'Who are you?');
        },
        (_req, res) => void res.json({}),
      ),
    );
    const res = await request(guarded).put('/things/x?n=bad').send({ name: '' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Who are you?' });
  });
});

describe('mount with deferValidation', () => {
  const reads: Array<ReadInput<typeof thing>> = [];
  const order: string[] = [];
  const server = app((r) =>
    mount(
      r,
      thing,
      deferValidation(async (req, res, read) => {
        order.push('handler');
        reads.push(read);
        const input = read(req);
        order.push('validated');
        const n: number = input.query.n;
        res.json({ id: input.params.id, n, name: input.body.name });
      }),
    ),
  );
  beforeEach(() => void (order.length = 0));

  it('runs the handler first; read() checks path, query and body as mount does, and is the same function for every request', async () => {
    const ok = await request(server).put('/things/7?n=2').set(good).send({ name: 'a' });
    expect(ok.body).toEqual({ id: '7', n: 2, name: 'a' });
    const bad = await request(server).put('/things/7').set(good).send({ name: '' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([{ loc: ['body', 'name'], msg: expect.any(String), type: 'too_small' }]);
    expect(order).toEqual(['handler', 'validated', 'handler']);
    expect(reads[0]).toBe(reads[1]);
  });

  it('leaves the headers to the route’s middleware', async () => {
    const res = await request(server).put('/things/7').send({ name: 'a' });
    expect(res.status).toBe(200);
  });
});
