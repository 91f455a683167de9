import { spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

// @seriousme/openapi-schema-validator is an ES module only, which jest's CommonJS runtime cannot
// load: it runs in a node child, the document on its stdin, the verdict on its stdout.
const SCRIPT = `
import { Validator } from '@seriousme/openapi-schema-validator';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const validator = new Validator();
const result = await validator.validate(JSON.parse(text));
let refs = null;
if (result.valid) {
  try { validator.resolveRefs(); } catch (err) { refs = String(err?.message ?? err); }
}
process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors ?? null, unresolvedRefs: refs }));
`;

export interface OpenApiVerdict {
  valid: boolean;
  errors: unknown;
  /** Why a $ref does not resolve, or null. */
  unresolvedRefs: string | null;
}

/** Validates an OpenAPI document with @seriousme/openapi-schema-validator (3.0 and 3.1), and resolves its references. */
export function validateOpenApi(doc: unknown): Promise<OpenApiVerdict> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the validator exited with ${code}: ${err}`));
      resolve(JSON.parse(out) as OpenApiVerdict);
    });
    child.stdin.end(JSON.stringify(doc));
  });
}
