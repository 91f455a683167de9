import { z } from 'zod';
import { route } from '../../../src/api/contract';
import { errorBody } from '../../../src/api/error-schemas';
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
        schema: z.object({ id: z.string(), size: z.number(), owner: z.object({ name: z.string().nullable() }), tags: z.array(z.object({ t: z.string() })) }),
        also: [{ contentType: 'text/csv', schema: z.string().startsWith('id,') }],
      },
      204: { description: 'Nothing' },
      404: { description: 'Missing', schema: errorBody },
    },
  });
  const json = { 'content-type': 'application/json; charset=utf-8' };
  const thing = { id: 'a', size: 1, owner: { name: null }, tags: [{ t: 'x' }] };

  it('accepts a body that is exactly what the schema documents, and returns it parsed', () => {
    expect(expectMatchesContract(contract, { status: 200, body: thing, headers: json })).toEqual(thing);
    expect(expectMatchesContract(contract, { status: 404, body: { detail: 'Not here' }, headers: json })).toEqual({ detail: 'Not here' });
    expect(expectMatchesContract(contract, { status: 204, body: {}, text: '', headers: {} })).toBeUndefined();
  });

  it('refuses a status the contract does not list', () => {
    expect(() => expectMatchesContract(contract, { status: 409, body: { detail: 'x' }, headers: json })).toThrow(/GET \/v1\/things\/:id → 409: status not in the contract \(documented: 200, 204, 404\)/);
  });

  it('refuses a wrong type and names the field', () => {
    expect(() => expectMatchesContract(contract, { status: 200, body: { ...thing, size: '1' }, headers: json })).toThrow(/size: .*expected number/);
    expect(() => expectMatchesContract(contract, { status: 200, body: { ...thing, owner: {} }, headers: json })).toThrow(/owner\.name/);
  });

  it('refuses fields the schema does not name, however deep', () => {
    expect(() => expectMatchesContract(contract, { status: 200, body: { ...thing, secret: 's' }, headers: json })).toThrow(/do(es)? not document: secret$/);
    expect(() => expectMatchesContract(contract, { status: 200, body: { ...thing, tags: [{ t: 'x', extra: 1 }] }, headers: json })).toThrow(/tags\[0\]\.extra/);
  });

  it('picks the schema by content type, and refuses an undocumented one', () => {
    expect(expectMatchesContract(contract, { status: 200, body: {}, text: 'id,size\r\n', headers: { 'content-type': 'text/csv; charset=utf-8' } })).toBe('id,size\r\n');
    expect(() => expectMatchesContract(contract, { status: 200, body: {}, text: 'size\r\n', headers: { 'content-type': 'text/csv' } })).toThrow(/breaks the documented schema/);
    expect(() => expectMatchesContract(contract, { status: 200, body: {}, text: '<p>', headers: { 'content-type': 'text/html' } })).toThrow(/answered with text\/html, but the contract documents application\/json, text\/csv/);
  });

  it('refuses a body where the contract documents none', () => {
    expect(() => expectMatchesContract(contract, { status: 204, body: {}, text: 'surprise', headers: {} })).toThrow(/documents no body/);
  });
});
