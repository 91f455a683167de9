import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../support/harness';
import { api, fund, newUser } from '../../accounts/e2e/helpers';

/**
 * Every shell block with a curl in the README and docs/*.md runs as written against a started
 * server: one bash per document, its blocks in order (so the ACCOUNTS.md walkthrough's variables
 * carry into its later blocks). Only the address changes (localhost:8080 and tollgate.example become
 * the test server), and lines that run the project itself (npx, npm) are left out.
 *
 * Each curl's status is recorded (a wrapper dumps the headers). A curl must reach the server; one
 * whose command line holds only real values must answer 2xx or 3xx; one that uses a placeholder the
 * reader fills in (READER_FILLS: set here to "unset-NAME") may answer 4xx, never 5xx. Any other
 * variable a document reads and never sets is one its walkthrough should have set: that fails the
 * document, as does anything on stderr (command not found, a jq error).
 */

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..', '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const ADMIN_TOKEN = 'docs-curl-admin-token-0123456789';
/**
 * The variables the documents leave to the reader, by document: ids the reader picks from a list
 * (a pending invitation, a member) and a session token "as in the walkthrough" of another page.
 */
const READER_FILLS: Record<string, string[]> = {
  'docs/ACCOUNTS.md': ['PENDING_INVITATION_ID', 'MEMBER_ID'],
  'docs/WEBHOOKS.md': ['TOKEN'],
};

/** The ```sh blocks of a Markdown text that run curl. */
function curlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)].map((m) => m[1]).filter((b) => /\bcurl\b/.test(b));
}

/** The variables a script reads ($NAME or ${NAME}) and never assigns. */
function placeholders(script: string): string[] {
  const read = new Set([...script.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]));
  const assigned = new Set([...script.matchAll(/^\s*([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]));
  return [...read].filter((v) => !assigned.has(v));
}

interface CurlCall {
  exit: number;
  status: number;
  args: string;
}

const WRAPPER = `
curl() {
  local headers; headers=$(mktemp)
  command curl -D "$headers" "$@"
  local rc=$?
  local status; status=$(awk 'toupper($1) ~ /^HTTP\\// { s = $2 } END { print s + 0 }' "$headers")
  local args; args=$(printf '%s ' "$@" | tr '\\n\\t' '  ')
  printf '%s\\t%s\\t%s\\n' "$rc" "$status" "$args" >> "$CURL_LOG"
  rm -f "$headers"
  return $rc
}
`;

let server: TestServer;
let key: { secret: string; keyId: string; workspaceId: string };
const dir = mkdtempSync(join(tmpdir(), 'tollgate-docs-curl-'));

beforeAll(async () => {
  server = await startTestServer({ ADMIN_TOKEN });
  // A key made the way ACCOUNTS.md makes one, so every route knows it (the admin's rate limit too).
  const user = await newUser(server, 'reader');
  await fund(server, user.personalWs);
  const created = await api(server).post(`/v1/workspaces/${user.personalWs}/keys`).set(user.auth).send({ name: 'docs' });
  if (created.status !== 201) throw new Error(`key creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  key = { secret: created.body.secret, keyId: created.body.keyId, workspaceId: user.personalWs };
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function runDocument(doc: string): Promise<{ calls: CurlCall[]; stderr: string; code: number | null; neverSet: string[] }> {
  const address = server.url; // http://127.0.0.1:<port>
  const blocks = curlBlocks(readFileSync(join(ROOT, doc), 'utf8')).map((b) =>
    b
      .replace(/https:\/\/tollgate\.example/g, address)
      .replace(/(https?:\/\/)?localhost:8080/g, address)
      .replace(/^(npx|npm) .*$/gm, ': # left out: $&'),
  );
  const script = blocks.join('\n');
  // What a reader already has: a funded key (README: "with a key"), its workspace and id, the operator token.
  const given: Record<string, string> = {
    API_KEY: key.secret,
    TOLLGATE_API_KEY: key.secret,
    WS: key.workspaceId,
    KEY_ID: key.keyId,
    ADMIN_TOKEN,
  };
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir };
  const neverSet: string[] = [];
  for (const name of placeholders(script)) {
    env[name] = given[name] ?? `unset-${name}`;
    if (given[name] === undefined && !READER_FILLS[doc]?.includes(name)) neverSet.push(name);
  }
  const log = join(dir, `${doc.replace(/\W/g, '_')}.log`);
  writeFileSync(log, '');
  const file = join(dir, `${doc.replace(/\W/g, '_')}.sh`);
  writeFileSync(file, WRAPPER + script);
  return new Promise((resolve) => {
    const child = spawn('bash', [file], { env: { ...env, CURL_LOG: log }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (d) => (stderr += d));
    child.once('exit', (code) => {
      const calls = readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [exit, status, args] = line.split('\t');
          return { exit: Number(exit), status: Number(status), args };
        });
      resolve({ calls, stderr, code, neverSet });
    });
  });
}

const withCurl = DOCS.filter((doc) => curlBlocks(readFileSync(join(ROOT, doc), 'utf8')).length > 0);

test('the documents with curl examples are found', () => {
  expect(withCurl).toEqual(expect.arrayContaining(['README.md', 'docs/ACCOUNTS.md', 'docs/INFERENCE.md', 'docs/OPERATIONS.md']));
});

test.each(withCurl)('%s: every curl runs as written', async (doc) => {
  const { calls, stderr, neverSet } = await runDocument(doc);
  // A variable read and never set, that the reader is not asked to fill in: the walkthrough forgot it.
  expect(neverSet).toEqual([]);
  expect(stderr).toBe('');
  expect(calls.length).toBeGreaterThan(0);
  const failures = calls.filter((c) => {
    if (c.exit !== 0 || c.status === 0 || c.status >= 500) return true;
    const filledIn = !c.args.includes('unset-');
    return filledIn && c.status >= 400;
  });
  expect(failures).toEqual([]);
  if (doc === 'docs/ACCOUNTS.md') {
    // The walkthrough ends with a completion from the key it created.
    expect(calls.find((c) => c.args.includes('/external/api/inference'))).toMatchObject({ exit: 0, status: 200 });
  }
});
