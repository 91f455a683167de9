import type { z } from 'zod';
import type { ResponseContract, RouteContract } from '../../src/api/contract';

/** What the helper reads of a supertest response. */
export interface AnsweredResponse {
  status: number;
  body: unknown;
  text?: string;
  headers: Record<string, string | string[] | undefined>;
}

/** The schema a response's content type calls for: the status's own, or one of its `also` alternatives. */
function schemaFor(answer: ResponseContract, contentType: string): { schema?: z.ZodType; json: boolean } {
  const base = (t: string | undefined) => (t ?? 'application/json').split(';')[0].trim().toLowerCase();
  const ct = base(contentType);
  for (const c of [answer, ...(answer.also ?? [])]) {
    if (base(c.contentType) === ct) return { schema: c.schema, json: ct === 'application/json' };
  }
  const offered = [answer, ...(answer.also ?? [])].map((c) => base(c.contentType)).join(', ');
  throw new Error(`answered with ${ct || 'no content type'}, but the contract documents ${offered}`);
}

/**
 * Checks a real answer against its route's contract: the status is one the contract lists, and the
 * body parses with the schema documented for that status and content type, holding no field the
 * schema does not name (a parsed object drops unknown keys, so the parse must equal the body).
 * Throws an error saying what differs; returns the parsed body.
 */
export function expectMatchesContract(contract: RouteContract, res: AnsweredResponse): unknown {
  const where = `${contract.method.toUpperCase()} ${contract.path} → ${res.status}`;
  const answer = contract.responses[res.status];
  if (!answer) throw new Error(`${where}: status not in the contract (documented: ${Object.keys(contract.responses).join(', ')})`);
  const contentType = String(res.headers['content-type'] ?? '');
  if (!answer.schema && !answer.also?.length) {
    if (res.text) throw new Error(`${where}: the contract documents no body, but one came: ${res.text.slice(0, 200)}`);
    return undefined;
  }
  let found;
  try {
    found = schemaFor(answer, contentType);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
  if (!found.schema) return undefined;
  const value = found.json ? res.body : res.text;
  const parsed = found.schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new Error(`${where}: the body breaks the documented schema: ${issues}\nbody: ${JSON.stringify(value).slice(0, 2000)}`);
  }
  const undocumented = extraKeys(value, parsed.data);
  if (undocumented.length) throw new Error(`${where}: fields the contract does not document: ${undocumented.join(', ')}`);
  return parsed.data;
}

/** Paths of keys present in `sent` but not in `parsed` (zod's objects strip keys they do not name). */
function extraKeys(sent: unknown, parsed: unknown, path = ''): string[] {
  if (Array.isArray(sent) && Array.isArray(parsed)) return sent.flatMap((v, i) => extraKeys(v, parsed[i], `${path}[${i}]`));
  if (!isObject(sent) || !isObject(parsed)) return [];
  return Object.keys(sent).flatMap((k) => {
    const at = path ? `${path}.${k}` : k;
    if (!(k in parsed)) return sent[k] === undefined ? [] : [at];
    return extraKeys(sent[k], parsed[k], at);
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
