import { problem } from '../platform/http/error-bodies';
import { z } from 'zod';
import type { ResponseContract, RouteContract } from '../platform/http/contract';
import { errorBody, validationErrorBody } from '../platform/http/error-schemas';
import { JsonSchema, SchemaComponents } from './json-schema';
import { SECURITY_SCHEMES, securityRequirements } from './security';

/**
 * Builds the OpenAPI 3.1 document from the route contracts: one operation per contract, its
 * parameters, body and answers converted from the same zod schemas `validate()` checks.
 * Error answers without a schema of their own get the shared bodies (`Error`, or
 * `ValidationError` for 422).
 */

export interface DocumentInput {
  version: string;
  /** Routes of the API port. */
  routes: readonly RouteContract[];
  /** Routes of another listener (the Prometheus one), each listed with that server. */
  elsewhere?: Array<{
    routes: readonly RouteContract[];
    server: { url: string; description: string; variables?: Record<string, unknown> };
  }>;
}

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, Operation>> };
type Operation = Record<string, unknown>;

const DESCRIPTION = [
  "tollgate meters and bills a conversation-completion API per API key: the spec's inference endpoints, an OpenAI-compatible ",
  "chat completions route, the account and billing API under /v1 used by the developer portal, Stripe webhooks and the operators' /admin.",
  '\n\nEvery error answers `{"detail": "…"}`; a refused value answers 422 with FastAPI\'s list `{"detail": [{"loc", "msg", "type"}]}`. ',
  'Money is a decimal string of USD on the wire.',
].join('');

const TAGS = [
  { name: 'inference', description: 'The metered inference endpoints (API key)' },
  { name: 'openai', description: 'OpenAI-compatible chat completions and model list (API key)' },
  { name: 'admin', description: 'Operators (ADMIN_TOKEN)' },
  { name: 'system', description: 'Health, readiness and metrics' },
  { name: 'webhooks', description: 'Stripe events' },
  { name: 'portal', description: "The developer portal's helper routes" },
  { name: 'meta', description: 'This document and its reference page' },
];

/** Express `:name` (and `*name`) parameters → OpenAPI `{name}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/[:*]([A-Za-z_$][\w$]*)/g, '{$1}');
}

const pathParams = (expressPath: string) => [...expressPath.matchAll(/[:*]([A-Za-z_$][\w$]*)/g)].map((m) => m[1]);

function operationId(c: RouteContract): string {
  const words = c.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return c.method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

/** An object schema's properties as parameters; path parameters are always required. */
function parameters(components: SchemaComponents, c: RouteContract): JsonSchema[] {
  const out: JsonSchema[] = [];
  const declared = c.params ? (components.convert(c.params, 'input') as { properties?: Record<string, JsonSchema> }) : {};
  for (const name of pathParams(c.path)) {
    out.push({ name, in: 'path', required: true, schema: declared.properties?.[name] ?? { type: 'string' } });
  }
  if (c.query) {
    const q = components.convert(c.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: rest, ...(description ? { description } : {}) });
    }
  }
  if (c.headers) {
    const h = components.convert(c.headers, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(h.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({
        name,
        in: 'header',
        required: h.required?.includes(name) ?? false,
        schema: rest,
        ...(description ? { description } : {}),
      });
    }
  }
  return out;
}

function mediaType(components: SchemaComponents, r: Omit<ResponseContract, 'description' | 'also'>, status: number): [string, JsonSchema] {
  const type = r.contentType ?? 'application/json';
  if (type.startsWith('text/event-stream')) {
    // `schema` is what one `data:` line holds, so a generated client types the frames it parses
    // (openapi-typescript reads `schema`); `x-itemSchema` repeats it for the tools that read OpenAPI
    // 3.2's `itemSchema` under its extension name (3.1 does not allow `itemSchema` itself).
    if (!r.eventSchema) return [type, { schema: { type: 'string', description: 'A text/event-stream' } }];
    const item = components.convert(r.eventSchema, 'output');
    return [
      type,
      {
        schema: { ...item, description: 'A text/event-stream: each `data:` line holds one JSON value of this schema' },
        'x-itemSchema': item,
      },
    ];
  }
  const schema = r.schema ?? (status >= 400 ? (status === 422 ? validationErrorBody : errorBody) : undefined);
  return [type, schema ? { schema: components.convert(schema, 'output') } : {}];
}

/** Every 429 and 503 carries it: the one error mapper sets it for `rate_limited` and `unavailable`. */
const RETRY_AFTER_HEADER = {
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'string' } },
};

/** What every answer of the API port carries (src/platform/http/middleware/request-id.ts). */
const REQUEST_ID_HEADER = {
  'x-request-id': {
    description:
      "This request's id: the caller's own x-request-id when it is sane, else a new uuid (on the inference routes, the requestId of its events)",
    schema: { type: 'string' },
  },
};

function responses(components: SchemaComponents, c: RouteContract, apiPort: boolean): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  // A JSON body that does not parse is refused before any route (the error mapper's 400).
  const declared = c.body && !c.responses[400] ? { ...c.responses, 400: problem('The body is not valid JSON') } : c.responses;
  for (const [key, r] of Object.entries(declared)) {
    const status = Number(key);
    const content: Record<string, JsonSchema> = {};
    const hasBody = r.schema || r.contentType || r.eventSchema || status >= 400;
    if (hasBody) {
      const [type, media] = mediaType(components, r, status);
      content[type] = media;
    }
    for (const more of r.also ?? []) {
      const [type, media] = mediaType(components, more, status);
      content[type] = media;
    }
    const headers = {
      ...(apiPort ? REQUEST_ID_HEADER : {}),
      ...(status === 429 || status === 503 ? RETRY_AFTER_HEADER : {}),
      ...Object.fromEntries(
        Object.entries(r.headers ?? {}).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
      ),
    };
    out[key] = {
      description: r.description,
      ...(Object.keys(headers).length ? { headers } : {}),
      ...(Object.keys(content).length ? { content } : {}),
    };
  }
  return out;
}

function requestBody(components: SchemaComponents, c: RouteContract): JsonSchema | undefined {
  if (!c.body) return undefined;
  // Optional when an empty object passes (validate() reads a missing body as {} unless bodyRequired).
  return {
    required: Boolean(c.bodyRequired) || !c.body.safeParse({}).success,
    content: { 'application/json': { schema: components.convert(c.body, 'input') } },
  };
}

export function buildOpenApiDocument(input: DocumentInput): OpenApiDocument {
  const components = new SchemaComponents();
  // Answers first: a shared name keeps its output shape; a differing input gets an "Input" twin.
  type Server = NonNullable<DocumentInput['elsewhere']>[number]['server'];
  const all: Array<{ c: RouteContract; server?: Server }> = [
    ...input.routes.map((c) => ({ c })),
    ...(input.elsewhere ?? []).flatMap((e) => e.routes.map((c) => ({ c, server: e.server }))),
  ];
  const answers = new Map(all.map(({ c, server }) => [c, responses(components, c, !server)]));
  components.convert(z.object({ e: errorBody, v: validationErrorBody }), 'output');
  const paths: OpenApiDocument['paths'] = {};
  for (const { c, server } of all) {
    const path = openApiPath(c.path);
    const item = (paths[path] ??= {}) as Record<string, unknown>;
    if (item[c.method]) throw new Error(`Two contracts for ${c.method.toUpperCase()} ${c.path}`);
    if (server) item.servers = [server];
    const params = parameters(components, c);
    const body = requestBody(components, c);
    item[c.method] = {
      operationId: operationId(c),
      summary: c.summary,
      ...(c.description ? { description: c.description } : {}),
      tags: c.tags,
      security: securityRequirements(c.security),
      ...(params.length ? { parameters: params } : {}),
      ...(body ? { requestBody: body } : {}),
      responses: answers.get(c),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'tollgate', version: input.version, description: DESCRIPTION },
    servers: [{ url: '/', description: 'The API port (PORT)' }],
    tags: [...new Set(all.flatMap(({ c }) => c.tags))].map((name) => TAGS.find((t) => t.name === name) ?? { name }),
    paths,
    components: { schemas: components.schemas, securitySchemes: SECURITY_SCHEMES },
  };
}
