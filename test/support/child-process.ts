import { ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
/** Where a bundle finds the packages it leaves out (a bundle lives outside the checkout): pass it as NODE_PATH. */
export const BUNDLE_NODE_PATH = join(ROOT, 'node_modules');
/** Bundles kept between test files and runs, one folder per script and build options. */
const CACHE = join(tmpdir(), 'tollgate-child-bundles');

const sha1 = (data: string | Buffer) => createHash('sha1').update(data).digest('hex');

/** What a cached bundle was built from: every input file (paths relative to ROOT) and its content hash. */
interface BundleIndex {
  bundle: string;
  inputs: Record<string, string>;
}

/** The cached bundle, if every file it was built from still has the content it had then. */
function cachedBundle(indexFile: string): string | null {
  try {
    const index = JSON.parse(readFileSync(indexFile, 'utf8')) as BundleIndex;
    if (!existsSync(index.bundle)) return null;
    for (const [file, hash] of Object.entries(index.inputs)) if (sha1(readFileSync(join(ROOT, file))) !== hash) return null;
    return index.bundle;
  } catch {
    return null;
  }
}

/**
 * How a test's child script runs. By default it is bundled with esbuild (the transpiler tsx uses)
 * and each child runs the bundle: a start under tsx costs ~0.8 s of CPU against ~0.25 s.
 * KILL_CHILD=tsx runs `node --import tsx <script>` instead.
 *
 * The bundle is cached under the system's temp folder by the content of every file it was built
 * from (sources and packages, listed by esbuild's metafile), so the test files that start the same
 * script (the cluster files, the CLI) and later runs build it once; a changed file builds it anew.
 * A bundle is never replaced in place: each content gets its own folder, so a run that started
 * children from an older one is not disturbed. dispose() is kept for the callers and does nothing.
 */
export function bundleChild(script: string): { args: string[]; dispose(): void } {
  const tsx = { args: ['--import', 'tsx', script], dispose: () => undefined };
  if (process.env.KILL_CHILD === 'tsx') return tsx;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional: falls back to tsx when esbuild is absent
    const esbuild = require('esbuild') as typeof import('esbuild');
    const options = {
      entryPoints: [script],
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      // Native, lazily loaded or thread-based packages stay in node_modules (found through NODE_PATH);
      // so does pdfkit, which reads its font data beside its own files (a bundle would move them).
      external: [
        'better-sqlite3',
        '@eventstore/db-client',
        'pg',
        'pino',
        'thread-stream',
        'pino-pretty',
        'tiktoken',
        'pdfkit',
        'standardwebhooks',
      ],
      // In one bundle every module shares the entry's `module`, so a `require.main === module` guard
      // (src/main.ts, src/cli/index.ts) would start that module too: the CLI ran twice over, and a
      // child importing src/main started a second service. The entry alone runs.
      // The bundle lives outside the checkout: the Lua loader (src/platform/redis-scripts.ts) reads
      // the scripts from the checkout's src/, as it does from source.
      define: { 'require.main': 'undefined', TOLLGATE_SRC_DIR: JSON.stringify(join(ROOT, 'src')) },
      logLevel: 'error',
    } satisfies import('esbuild').BuildOptions;
    const dir = join(CACHE, sha1(JSON.stringify({ options, esbuild: esbuild.version })).slice(0, 16));
    const indexFile = join(dir, 'index.json');
    const cached = cachedBundle(indexFile);
    if (cached) return { args: [cached], dispose: () => undefined };
    mkdirSync(dir, { recursive: true });
    const build = mkdtempSync(join(dir, 'build-'));
    const outfile = join(build, `${basename(script, '.ts')}.cjs`);
    const { metafile } = esbuild.buildSync({ ...options, outfile, metafile: true });
    const inputs = Object.fromEntries(Object.keys(metafile.inputs).map((f) => [f, sha1(readFileSync(join(ROOT, f)))]));
    // Written whole, then renamed: another worker reading the index sees the old one or this one.
    const tmpIndex = join(build, 'index.json');
    writeFileSync(tmpIndex, JSON.stringify({ bundle: outfile, inputs } satisfies BundleIndex));
    renameSync(tmpIndex, indexFile);
    return { args: [outfile], dispose: () => undefined };
  } catch (err) {
    process.stderr.write(`esbuild unavailable (${(err as Error).message}); children run under tsx\n`);
    return tsx;
  }
}

/** A child process whose stdout lines can be awaited. */
export class Child {
  readonly proc: ChildProcess;
  private buf = '';
  private readonly lines: string[] = [];
  private readonly waiters: Array<{ re: RegExp; resolve: (m: RegExpMatchArray) => void; reject: (e: Error) => void }> = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  onLine: ((line: string) => void) | null = null;
  stderr = '';

  constructor(args: string[], env: Record<string, string>) {
    this.proc = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, NODE_PATH: BUNDLE_NODE_PATH, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        for (const w of this.waiters.splice(0))
          w.reject(new Error(`child exited (${signal ?? code}) before printing ${w.re}; stderr: ${this.stderr}`));
        resolve({ code, signal });
      }),
    );
    this.proc.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.lines.push(line);
        for (const w of [...this.waiters]) {
          const m = line.match(w.re);
          if (m) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(m);
          }
        }
        this.onLine?.(line);
      }
    });
    this.proc.stderr!.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4000)));
    // A child killed or dead at start can reset its stdio pipes (socket pairs): not the test's failure.
    for (const s of [this.proc.stdin, this.proc.stdout, this.proc.stderr]) s?.on('error', () => undefined);
  }

  /** Resolves with the first line (printed so far or later) that matches. */
  waitFor(re: RegExp, ms = 90_000): Promise<RegExpMatchArray> {
    for (const l of this.lines) {
      const m = l.match(re);
      if (m) return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`child did not print ${re} within ${ms} ms; stderr: ${this.stderr}`)), ms);
      this.waiters.push({ re, resolve: (m) => (clearTimeout(t), resolve(m)), reject: (e) => (clearTimeout(t), reject(e)) });
    });
  }

  /** Every line printed so far that matches. */
  matching(re: RegExp): string[] {
    return this.lines.filter((l) => re.test(l));
  }

  send(line: string): void {
    this.proc.stdin!.write(line + '\n');
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
    await this.exited;
  }
}
