import { z } from 'zod';
import { route } from '../../../src/platform/http/contract';
import { errorBody } from '../../../src/platform/http/error-schemas';
import { expectMatchesContract } from '../../support/contract';

/** The conformance helper the e2e suites use must itself refuse each kind of drift. */
describe('expectMatchesContract', () => {
  const contract = route({
    method: 'get',
    path: '/v1/things/:id',
    summary: 'A thing',
    tags: ['test'],
    security: [],
    responses: {
      200: {
        description: 'The thing',
        schema: z.object({
          id: z.string(),
          size: z.number(),
          owner: z.object({ name: z.string().nullable() }),
          tags: z.array(z.object({ t: z.string() })),
        }),
        also: [
          { contentType: 'text/csv', schema: z.string().startsWith('id,') },
          { contentType: 'text/event-stream', eventSchema: z.object({ n: z.number() }) },
        ],
      },
      204: { description: 'Nothing' },
      404: { description: 'Missing', schema: errorBody },
    },
  });
  const json = (status: number, body: unknown) => ({
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    text: JSON.stringify(body),
  });
  const thing = { id: 'a', size: 1, owner: { name: null }, tags: [{ t: 'x' }] };

  it('accepts a body that is exactly what the schema documents, and returns it', async () => {
    await expect(expectMatchesContract(json(200, thing), contract)).resolves.toEqual(thing);
    await expect(expectMatchesContract(json(404, { detail: 'Not here' }), contract)).resolves.toEqual({ detail: 'Not here' });
    await expect(expectMatchesContract({ status: 204, headers: {}, text: '' }, contract)).resolves.toBeUndefined();
  });

  it('refuses a status the contract does not list', async () => {
    await expect(expectMatchesContract(json(409, { detail: 'x' }), contract)).rejects.toThrow(
      /GET \/v1\/things\/:id → 409: status not in the contract \(documented: 200, 204, 404\)/,
    );
  });

  it('refuses a wrong type, naming the field', async () => {
    await expect(expectMatchesContract(json(200, { ...thing, size: '1' }), contract)).rejects.toThrow(/"path":\["size"\]/);
    await expect(expectMatchesContract(json(200, { ...thing, owner: {} }), contract)).rejects.toThrow(/"path":\["owner","name"\]/);
  });

  it('refuses fields the schema does not name, however deep', async () => {
    await expect(expectMatchesContract(json(200, { ...thing, secret: 's' }), contract)).rejects.toThrow(
      /fields its schema does not document/,
    );
    await expect(expectMatchesContract(json(200, { ...thing, tags: [{ t: 'x', extra: 1 }] }), contract)).rejects.toThrow(
      /fields its schema does not document/,
    );
  });

  it('picks the schema by content type, checks each event of a stream, and refuses an undocumented type', async () => {
    const csv = { status: 200, headers: { 'content-type': 'text/csv; charset=utf-8' }, text: 'id,size\r\n' };
    await expect(expectMatchesContract(csv, contract)).resolves.toBe('id,size\r\n');
    await expect(expectMatchesContract({ ...csv, text: 'size\r\n' }, contract)).rejects.toThrow(/does not match its documented schema/);
    const sse = {
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      text: ': hi\n\nevent: x\ndata: {"n":1}\n\ndata: {"n":2}\n\n',
    };
    await expect(expectMatchesContract(sse, contract)).resolves.toEqual([{ n: 1 }, { n: 2 }]);
    await expect(expectMatchesContract({ ...sse, text: 'data: {"n":"1"}\n\n' }, contract)).rejects.toThrow(/\(event 0\)/);
    await expect(expectMatchesContract({ status: 200, headers: { 'content-type': 'text/html' }, text: '<p>' }, contract)).rejects.toThrow(
      /content-type text\/html is not documented \(application\/json, text\/csv, text\/event-stream\)/,
    );
  });

  it('refuses a body where the contract documents none, and no body where it documents one', async () => {
    await expect(expectMatchesContract(json(204, { surprise: true }), contract)).rejects.toThrow(
      /a JSON body, but the contract documents none/,
    );
    await expect(
      expectMatchesContract({ status: 200, headers: { 'content-type': 'application/json' }, text: '' }, contract),
    ).rejects.toThrow(/no body, but the contract documents one/);
  });
});
