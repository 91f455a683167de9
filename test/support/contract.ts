import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import type { ResponseContract, RouteContract } from '../../src/platform/http/contract';
import { errorBody, validationErrorBody } from '../../src/platform/http/error-schemas';

/**
 * Checks a real answer (fetch or supertest) against its route contract and returns its body (parsed JSON, the event
 * stream's data values, or the text): the status is documented, the media type is the documented
 * one, and the body passes the documented schema with no field the schema does not name (zod
 * strips unknown keys, so a parse that changes the body means an undocumented field).
 */
export async function expectMatchesContract(answer: Answer, contract: RouteContract): Promise<unknown> {
  const res = await read(answer);
  const where = `${contract.method.toUpperCase()} ${contract.path} → ${res.status}`;
  const documented = contract.responses[res.status];
  if (!documented) throw new Error(`${where}: status not in the contract (documented: ${Object.keys(contract.responses).join(', ')})`);
  const essence = (t: string | undefined) => (t ?? 'application/json').split(';')[0].trim().toLowerCase();
  const got = essence(res.contentType);
  const media = [documented, ...(documented.also ?? [])].find((m) => essence(m.contentType) === got) as ResponseContract | undefined;
  if (!media) {
    const allowed = [documented, ...(documented.also ?? [])].map((m) => essence(m.contentType));
    throw new Error(`${where}: content-type ${got} is not documented (${allowed.join(', ')})`);
  }
  const text = res.text;
  if (got === 'text/event-stream') {
    const values = text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6))
      .filter((d) => d !== '[DONE]')
      .map((d) => JSON.parse(d) as unknown);
    if (media.eventSchema) values.forEach((v, i) => check(media.eventSchema!, v, `${where} (event ${i})`));
    return values;
  }
  if (got !== 'application/json') {
    if (media.schema) check(media.schema, text, where);
    return text;
  }
  if (text === '') {
    // No body (a 204): right only when the contract documents none.
    if (media.schema) throw new Error(`${where}: no body, but the contract documents one`);
    return undefined;
  }
  const body = JSON.parse(text) as unknown;
  const schema = media.schema ?? (res.status >= 400 ? (res.status === 422 ? validationErrorBody : errorBody) : undefined);
  if (!schema) throw new Error(`${where}: a JSON body, but the contract documents none`);
  check(schema, body, where);
  return body;
}

/** A fetch Response, or a supertest answer (its `text` is the body as received). */
export type Answer = Response | { status: number; headers: Record<string, unknown>; text: string };

async function read(a: Answer): Promise<{ status: number; contentType: string | undefined; text: string }> {
  if (a instanceof Response) return { status: a.status, contentType: a.headers.get('content-type') ?? undefined, text: await a.text() };
  const type = a.headers['content-type'];
  return { status: a.status, contentType: typeof type === 'string' ? type : undefined, text: a.text ?? '' };
}

function check(schema: z.ZodType, value: unknown, where: string): void {
  const r = schema.safeParse(value);
  if (!r.success)
    throw new Error(
      `${where}: body does not match its documented schema: ${JSON.stringify(r.error.issues.slice(0, 5))}\n${JSON.stringify(value).slice(0, 500)}`,
    );
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(r.data)), value)) {
    throw new Error(`${where}: body has fields its schema does not document:\n${JSON.stringify(value).slice(0, 500)}`);
  }
}

/** The contract of the route that serves `method path` (a concrete path such as /v1/workspaces/ws_1), or an error naming it. */
export function contractFor(method: string, path: string, routes: readonly RouteContract[] = allContracts()): RouteContract {
  const pattern = (p: string) => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_$][\w$]*/g, '[^/]+')}/?$`);
  const found = routes.find((c) => c.method === method.toLowerCase() && pattern(c.path).test(path));
  if (!found) throw new Error(`no contract serves ${method.toUpperCase()} ${path}`);
  return found;
}

function allContracts(): readonly RouteContract[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: the route table loads every area, needed only here
  return (require('../../src/openapi/areas') as typeof import('../../src/openapi/areas')).API_ROUTES;
}

/**
 * A tour of one area's routes, called for real: `conforms` checks that an answer has the status the
 * tour expects and matches its contract; `missed` lists the documented routes the tour never called.
 */
export function contractTour() {
  const checked = new Set<RouteContract>();
  return {
    async conforms(contract: RouteContract, res: Answer & { text: string }, status: number): Promise<unknown> {
      checked.add(contract);
      if (res.status !== status)
        throw new Error(`${contract.method.toUpperCase()} ${contract.path}: ${res.status} where ${status} was due: ${res.text}`);
      return expectMatchesContract(res, contract);
    },
    missed: (routes: readonly RouteContract[]) => routes.filter((c) => !checked.has(c)).map((c) => `${c.method.toUpperCase()} ${c.path}`),
  };
}
