import { z } from 'zod';

/**
 * zod 4 → JSON Schema draft 2020-12 (the dialect OpenAPI 3.1 uses), with every schema that has an
 * `id` (`.meta({ id })`) hoisted into `components.schemas` and referenced from there, so the
 * error bodies and shared shapes are defined once.
 *
 * - io 'input' describes what a caller may send (before defaults and transforms), 'output' what
 *   the service answers.
 * - `unrepresentable: 'any'`: a refinement or transform keeps the JSON Schema of its input (or
 *   `{}` where there is none) instead of failing the whole document; the route's description says
 *   what such a rule checks.
 */

export type JsonSchema = Record<string, unknown>;
export type Io = 'input' | 'output';

const DEFS = '#/$defs/';
const COMPONENTS = '#/components/schemas/';

function rewriteRefs(node: unknown, rename: (id: string) => string): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteRefs(n, rename));
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] =
      k === '$ref' && typeof v === 'string' && v.startsWith(DEFS) ? COMPONENTS + rename(v.slice(DEFS.length)) : rewriteRefs(v, rename);
  }
  return out;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class SchemaComponents {
  readonly schemas: Record<string, JsonSchema> = {};

  /** The JSON Schema of `schema`, its named parts moved to the components. */
  convert(schema: z.ZodType, io: Io): JsonSchema {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    const { $schema: _dialect, $defs, ...root } = json as JsonSchema & { $defs?: Record<string, JsonSchema> };
    // A name whose input and output differ (defaults, transforms) gets an "Input" twin.
    const names = new Map<string, string>();
    for (const [id, def] of Object.entries($defs ?? {})) {
      const taken = this.schemas[id];
      names.set(id, !taken || same(taken, def) || io === 'output' ? id : `${id}Input`);
    }
    const rename = (id: string) => names.get(id) ?? id;
    for (const [id, def] of Object.entries($defs ?? {})) {
      const name = rename(id);
      const body = rewriteRefs(def, rename) as JsonSchema;
      const existing = this.schemas[name];
      if (existing && !same(existing, body)) throw new Error(`Two different schemas are named ${name} in the OpenAPI document`);
      this.schemas[name] = body;
    }
    return rewriteRefs(root, rename) as JsonSchema;
  }
}
