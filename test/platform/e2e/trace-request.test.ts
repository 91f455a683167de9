import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

// `npm run trace:request` (test/trace/request.ts): V8 coverage of one request, its effects included.

const ROOT = resolve(__dirname, '..', '..', '..');

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/trace/request.ts', ...args], { cwd: ROOT, env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

/** The folder → files listing of the text output. */
function listing(stdout: string): Map<string, string[]> {
  const folders = new Map<string, string[]>();
  let current: string[] | null = null;
  for (const line of stdout.split('\n')) {
    const folder = /^(src(?:\/\S+)?)\/ \(\d+\)$/.exec(line);
    if (folder) folders.set(folder[1], (current = []));
    else if (current && /^ {2}\S/.test(line)) current.push(line.trim().replace(/ \*$/, ''));
  }
  return folders;
}

describe('npm run trace:request', () => {
  test('spec: the files on the path, none that only start the service, and the count on the last line', async () => {
    const r = await run(['spec']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    const last = /^(\d+) files in (\d+) folders$/.exec(lines[lines.length - 1]);
    expect(last).not.toBeNull();
    const folders = listing(r.stdout);
    const files = [...folders].flatMap(([folder, fs]) => fs.map((f) => `${folder}/${f}`));
    expect(Number(last![1])).toBe(files.length);
    expect(Number(last![2])).toBe(folders.size);
    expect(r.stdout).toMatch(/^events appended: InferenceRequested, InferenceCompleted, TokensDebited;/m);

    // On the path, wherever the files move: the tokenizer, an inference route, the store's writer
    // thread (a worker's coverage counts too) and the ledger's projection (the effects after the answer).
    expect(files.filter((f) => f.endsWith('/tokenizer.ts'))).toHaveLength(1);
    expect(files.some((f) => /^src\/inference\/.*route/.test(f))).toBe(true);
    expect(files.some((f) => f.endsWith('/sqlite-writer-thread.ts'))).toBe(true);
    expect(files.some((f) => /\/ledger\/projection\.ts$/.test(f))).toBe(true);
    // Run at start-up only: coverage taken from the process's start would list them.
    expect(files).not.toContain('src/main.ts');
    expect(files).not.toContain('src/platform/config.ts');
    expect(files).not.toContain('src/modules.ts');
    // Barrels are left out by the rule, and said so.
    expect(r.stdout).toMatch(/^left out, no code of their own: .*src\/billing\/index\.ts/m);
    expect(files).not.toContain('src/billing/index.ts');
  });

  test('--list names the four scenarios; an unknown one exits non-zero with one line naming the valid ones', async () => {
    const list = await run(['--list']);
    expect(list.code).toBe(0);
    expect(
      list.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(['spec', 'streamed', 'create-key', 'reload']);
    const bad = await run(['nope']);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toBe('');
    expect(bad.stderr.trimEnd().split('\n')).toEqual([
      'trace:request: unknown scenario "nope"; valid scenarios: spec, streamed, create-key, reload (options: --json, --list)',
    ]);
  });
});
