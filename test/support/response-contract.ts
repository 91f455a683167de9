import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../src/openapi/router';
import { isProbe } from './live-usage';

/**
 * Every answer an end-to-end test's server gives, checked against the OpenAPI document (what a
 * client that validates with ajv does): its status is declared, its JSON body matches the declared
 * schema (each `data:` frame of a stream, its item schema), and the headers a client reads (`x-request-id`, `x-ratelimit-*`, `Retry-After`,
 * `Location`, `Set-Cookie`, …) are declared. The harness records the answers of every server it
 * starts and checks them when the server closes, so a route that drifts from its contract fails
 * the suite that exercised it (test/platform/unit/response-contract.test.ts shows it catching drift).
 */

export interface RecordedAnswer {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** Headers a client reads from an answer; the transport's own (date, content-length, …) are not checked. */
const CLIENT_READ =
  /^(x-request-id|x-ratelimit-.*|x-usage-.*|x-budget-.*|retry-after|location|set-cookie|idempotent-replayed|www-authenticate|content-disposition)$/i;
/** Bodies kept per answer: enough for every JSON answer a test provokes; a bigger one (an export) is not parsed. */
const MAX_BODY = 1 << 20;

/** Records the answers `server` gives, from the first byte its handler writes. */
export function recordAnswers(server: Server): RecordedAnswer[] {
  const answers: RecordedAnswer[] = [];
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > MAX_BODY) return;
      const b = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      size += b.length;
      chunks.push(b);
    };
    const write = res.write.bind(res) as (...a: unknown[]) => boolean;
    const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
    res.write = ((...a: unknown[]) => (keep(a[0], a[1]), write(...a))) as ServerResponse['write'];
    res.end = ((...a: unknown[]) => (keep(a[0], a[1]), end(...a))) as ServerResponse['end'];
    res.on('finish', () => {
      answers.push({
        method: (req.method ?? 'GET').toLowerCase(),
        path: (req.url ?? '/').split('?')[0],
        status: res.statusCode,
        headers: res.getHeaders(),
        body: size > MAX_BODY ? '' : Buffer.concat(chunks).toString('utf8'),
      });
    });
  });
  return answers;
}

interface Operation {
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }>;
}

let checker: ((a: RecordedAnswer) => string[]) | undefined;

/** The problems of one answer against the document (none when it matches). */
export function contractProblems(a: RecordedAnswer): string[] {
  checker ??= buildChecker();
  return checker(a);
}

function buildChecker(): (a: RecordedAnswer) => string[] {
  const doc = JSON.parse(JSON.stringify(openApiDocument())) as { paths: Record<string, Record<string, Operation>> };
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ ...doc, $id: 'openapi.json' });
  const routes = Object.entries(doc.paths).map(([path, item]) => ({
    path,
    item,
    // `{name}` matches one segment; a trailing `{path}` of a catch-all route (`/docs/{path}`) matches the rest.
    re: new RegExp(`^${path.replace(/[.+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    literal: (path.match(/\{/g) ?? []).length,
  }));
  const pointer = (...parts: string[]) => `openapi.json#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
  const validators = new Map<string, ReturnType<typeof ajv.compile>>();

  return (a) => {
    // The most specific path first (fewest parameters): `/v1/me` before `/v1/{x}`.
    const route = routes.filter((r) => r.re.test(a.path) && r.item[a.method]).sort((x, y) => x.literal - y.literal)[0];
    if (!route) return []; // a path no contract serves (an unknown route's 404, a static file)
    const op = route.item[a.method];
    const where = `${a.method.toUpperCase()} ${route.path} → ${a.status}`;
    const declared = op.responses[String(a.status)] ?? op.responses[`${String(a.status)[0]}XX`] ?? op.responses.default;
    // 500 is the service's last resort for the unexpected, answered by every route alike.
    if (!declared) return a.status === 500 ? [] : [`${where}: status not declared (declared: ${Object.keys(op.responses).join(', ')})`];
    const problems: string[] = [];
    const declaredHeaders = new Set(Object.keys(declared.headers ?? {}).map((h) => h.toLowerCase()));
    for (const name of Object.keys(a.headers)) {
      if (CLIENT_READ.test(name) && !declaredHeaders.has(name.toLowerCase())) problems.push(`${where}: header ${name} not declared`);
    }
    const type = String(a.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    // A declared media type may carry parameters (`text/plain; version=0.0.4; charset=utf-8`): compare the type itself.
    const media = declared.content?.[type] ?? Object.entries(declared.content ?? {}).find(([k]) => k.split(';')[0]!.trim() === type)?.[1];
    if (a.body && type && declared.content && !media)
      problems.push(`${where}: content type ${type} not declared (declared: ${Object.keys(declared.content).join(', ')})`);
    if (media?.schema && type === 'application/json' && a.body) {
      const key = pointer('paths', route.path, a.method, 'responses', String(a.status), 'content', type, 'schema');
      let validate = validators.get(key);
      if (!validate) validators.set(key, (validate = ajv.compile({ $ref: key })));
      let body: unknown;
      try {
        body = JSON.parse(a.body);
      } catch {
        return [...problems, `${where}: the body is not JSON`];
      }
      if (!validate(body)) problems.push(`${where}: body does not match: ${ajv.errorsText(validate.errors)} in ${a.body.slice(0, 300)}`);
    }
    // A stream: every `data:` value (but OpenAI's `[DONE]`) is one value of the declared item schema.
    const item = media?.schema as { type?: unknown } | undefined;
    if (item && type === 'text/event-stream' && item.type !== 'string' && a.body) {
      const key = pointer('paths', route.path, a.method, 'responses', String(a.status), 'content', type, 'schema');
      let validate = validators.get(key);
      if (!validate) validators.set(key, (validate = ajv.compile({ $ref: key })));
      for (const frame of a.body.split(/\r?\n\r?\n/)) {
        const data = frame
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).replace(/^ /, ''))
          .join('\n');
        // `[DONE]` ends OpenAI's streams; a probe is a message a test published itself (./live-usage.ts).
        if (!data || data === '[DONE]' || isProbe(frame)) continue;
        let value: unknown;
        try {
          value = JSON.parse(data);
        } catch {
          problems.push(`${where}: a stream frame is not JSON: ${data.slice(0, 200)}`);
          break;
        }
        if (!validate(value)) {
          problems.push(`${where}: a stream frame does not match: ${ajv.errorsText(validate.errors)} in ${data.slice(0, 300)}`);
          break;
        }
      }
    }
    return problems;
  };
}

/**
 * Lists every answer that does not match the document, as an error: drift fails the suite that
 * provoked it. TEST_RESPONSE_CONTRACT=warn turns it into one warning on stderr (to list every
 * drift of a run at once while fixing them).
 */
export function assertAnswersMatchContract(answers: RecordedAnswer[]): void {
  const problems = [...new Set(answers.flatMap(contractProblems))];
  if (!problems.length) return;
  const text = `${problems.length} answer(s) do not match the OpenAPI document (src/openapi, the route contracts):\n  ${problems.join('\n  ')}`;
  if (process.env.TEST_RESPONSE_CONTRACT !== 'warn') throw new Error(text);
  process.stderr.write(`${text}\n`);
}
