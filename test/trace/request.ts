/**
 * `npm run trace:request -- <scenario> [--json]` · `--list`
 *
 * Lists the src/ files whose code ran for one request of a named scenario (test/trace/scenarios.ts)
 * in a service started in this process on the embedded defaults (a SQLite file in a temp dir, the
 * local Redis under a private prefix; both removed at the end). V8 precise coverage is reset just
 * before the request and taken once its effects have settled: the events it appended are projected,
 * every reactor has seen them and no BullMQ job waits or runs. So start-up and set-up code is not
 * counted. A function that also runs in an idle window of the same length right after (the event
 * store's poll, the tool's own waiting) is not the request's; periodic timers started before the
 * request are held during both windows. Files with no code of their own (barrels, types) are left out.
 * The last line reads `N files in M folders`.
 */
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Coverage, FunctionRun, IntervalHold, Window } from './coverage';
import { groupByFolder, hasNoCodeOfItsOwn, Grouped } from './files';

const ROOT = resolve(__dirname, '..', '..');
const SRC = join(ROOT, 'src');

export const RULE =
  'a src/ file counts when one of its functions ran between the coverage reset just before the request and the coverage taken once its effects settled, ' +
  'and did not run in an idle window of the same length after it; files with no code of their own (only imports, re-exports and types: barrel index.ts files, type files) ' +
  "and files of which only a constant or a class was read (the transform's export getters ran, no code of the file) are left out";

export interface TraceResult {
  scenario: string;
  describe: string;
  events: string[];
  windowMs: number;
  rule: string;
  files: string[];
  /** The files that ran only once the answer was read (projector, reactors, workers). */
  afterTheAnswer: string[];
  folders: Grouped[];
  /** Per counted file, the names of its functions that ran (why it is on the path). */
  functions: Record<string, string[]>;
  count: number;
  folderCount: number;
  leftOut: { noCodeOfItsOwn: string[]; alsoIdle: string[]; onlyRead: string[] };
}

function srcPathOf(url: string): string | null {
  const path = url.startsWith('file:') ? fileURLToPath(url) : url;
  if (!path.startsWith(SRC + '/') || path.includes('/node_modules/') || !/\.(ts|tsx|js)$/.test(path)) return null;
  return path;
}

/**
 * The module system's plumbing that tsx's esbuild transform adds to every file: the getter of each
 * export (`name: () => name`), the getter through which module.exports reads it (`get: () => from[key]`)
 * and `__name`. They run when another file reads a constant or a class of this one: that is not the
 * file's code running, and a different transpiler would not run them at all.
 */
function isPlumbing(f: FunctionRun): boolean {
  // tsx prints them without spaces (`()=>name`); esbuild's default printing has them.
  const getterOf = (body: string) => f.length === `()=>${body}`.length || f.length === `() => ${body}`.length;
  return f.name === '__name' || (f.name === 'get' && getterOf('from[key]')) || (f.name !== '' && getterOf(f.name));
}

/** The src/ files with a function that ran in `window` and not in `idle`, and those left out. */
export function filesOf(window: Window, idle: Window) {
  const ran = new Set<string>();
  const alsoIdle = new Set<string>();
  const onlyRead = new Set<string>();
  for (const [url, all] of window) {
    const path = srcPathOf(url);
    if (!path) continue;
    const fns = all.filter((f) => !isPlumbing(f));
    const idleKeys = new Set((idle.get(url) ?? []).map((f) => f.key));
    if (fns.some((f) => !idleKeys.has(f.key))) ran.add(path);
    else if (fns.length) alsoIdle.add(path);
    else onlyRead.add(path);
  }
  const functions: Record<string, string[]> = {};
  for (const [url, fns] of window) {
    const path = srcPathOf(url);
    if (!path || !ran.has(path)) continue;
    const idleKeys = new Set((idle.get(url) ?? []).map((f) => f.key));
    functions[path.slice(ROOT.length + 1)] = [
      ...new Set(fns.filter((f) => !isPlumbing(f) && !idleKeys.has(f.key)).map((f) => f.name || '(anonymous)')),
    ].sort();
  }
  const noCode = [...ran].filter(hasNoCodeOfItsOwn);
  const files = [...ran].filter((f) => !noCode.includes(f)).sort();
  const rel = (fs: Iterable<string>) => [...fs].map((f) => f.slice(ROOT.length + 1)).sort();
  return { files, functions, noCodeOfItsOwn: rel(noCode), alsoIdle: rel(alsoIdle), onlyRead: rel(onlyRead) };
}

/** Two consecutive windows as one (the counts summed). */
function merge(a: Window, b: Window): Window {
  const out: Window = new Map(a);
  for (const [url, fns] of b) out.set(url, [...(out.get(url) ?? []), ...fns]);
  return out;
}

function printText(r: TraceResult): void {
  const out: string[] = [];
  out.push(`trace of ${r.scenario}: ${r.describe}`);
  out.push(`events appended: ${r.events.join(', ') || '(none)'}; measured window ${Math.round(r.windowMs)} ms`);
  out.push(`rule: ${r.rule}`);
  if (r.leftOut.noCodeOfItsOwn.length) out.push(`left out, no code of their own: ${r.leftOut.noCodeOfItsOwn.join(', ')}`);
  if (r.leftOut.onlyRead.length) out.push(`left out, only a constant or class of theirs read: ${r.leftOut.onlyRead.join(', ')}`);
  if (r.leftOut.alsoIdle.length) out.push(`left out, ran only what also runs idle: ${r.leftOut.alsoIdle.join(', ')}`);
  out.push('');
  const after = new Set(r.afterTheAnswer);
  out.push(`(* ran only after the answer was read: projector, reactors, workers; ${r.afterTheAnswer.length} files)`);
  for (const g of r.folders)
    out.push(`${g.folder}/ (${g.files.length})`, ...g.files.map((f) => `  ${f}${after.has(`${g.folder}/${f}`) ? ' *' : ''}`));
  out.push('');
  out.push(`${r.count} files in ${r.folderCount} folders`);
  process.stdout.write(out.join('\n') + '\n');
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const list = argv.includes('--list');
  const names = argv.filter((a) => !a.startsWith('--'));
  const unknownFlag = argv.find((a) => a.startsWith('--') && !['--json', '--list'].includes(a));

  // Coverage and the timer hold go in before any of the service's modules load.
  const coverage = new Coverage();
  await coverage.start();
  const hold = new IntervalHold();
  hold.install();
  const { SCENARIOS } = await import('./scenarios');
  const valid = SCENARIOS.map((s) => s.name).join(', ');
  if (list) {
    const width = Math.max(...SCENARIOS.map((s) => s.name.length));
    for (const s of SCENARIOS) process.stdout.write(`${s.name.padEnd(width)}  ${s.describe}\n`);
    return 0;
  }
  const scenario = SCENARIOS.find((s) => s.name === names[0]);
  if (unknownFlag || names.length !== 1 || !scenario) {
    const what = unknownFlag
      ? `unknown option ${unknownFlag}`
      : names.length === 0
        ? 'no scenario given'
        : names.length > 1
          ? `one scenario, not ${names.length}`
          : `unknown scenario "${names[0]}"`;
    process.stderr.write(`trace:request: ${what}; valid scenarios: ${valid} (options: --json, --list)\n`);
    return 2;
  }

  const { startTestServer } = await import('../support/harness');
  const { Quiet } = await import('./quiet');
  // The sweeper's BullMQ job is scheduled in Redis, not by a timer the hold can see: a day apart.
  const server = await startTestServer({ SWEEPER_INTERVAL_MS: String(24 * 3600_000) });
  const quiet = await Quiet.watch(server.services);
  try {
    const prepared = await scenario.prepare(server, () => quiet.settle());
    if (prepared.ready) await quiet.until(prepared.ready, 'the scenario to be ready');
    await quiet.settle({ queues: !prepared.ready });
    const from = await server.services.store.headPosition();

    hold.hold();
    await coverage.reset();
    const t0 = performance.now();
    await prepared.run();
    const answer = await coverage.take();
    await quiet.settle();
    const after = await coverage.take();
    const window = merge(answer, after);
    const windowMs = performance.now() - t0;
    // The same waiting, with nothing to wait for, as long as the window lasted (at least a second).
    await coverage.reset();
    const t1 = performance.now();
    while (performance.now() - t1 < Math.max(windowMs, 1000)) {
      await quiet.poll();
      await new Promise((r) => setTimeout(r, 10));
    }
    const idle = await coverage.take();
    hold.release();
    const events = (await server.services.store.readAll({ fromPosition: from, maxCount: 1000 })).filter((e) => e.position > from);
    if (!events.some((e) => e.type === scenario.endsWith)) {
      throw new Error(
        `the service went quiet before ${scenario.endsWith} was appended (appended: ${events.map((e) => e.type).join(', ') || 'nothing'})`,
      );
    }

    const { files, functions, noCodeOfItsOwn, alsoIdle, onlyRead } = filesOf(window, idle);
    const inAnswer = new Set(filesOf(answer, idle).files);
    const folders = groupByFolder(SRC, files);
    const result: TraceResult = {
      scenario: scenario.name,
      describe: scenario.describe,
      events: events.map((e) => e.type),
      windowMs,
      rule: RULE,
      files: files.map((f) => f.slice(ROOT.length + 1)),
      afterTheAnswer: files.filter((f) => !inAnswer.has(f)).map((f) => f.slice(ROOT.length + 1)),
      folders,
      functions: Object.fromEntries(files.map((f) => f.slice(ROOT.length + 1)).map((f) => [f, functions[f]])),
      count: files.length,
      folderCount: folders.length,
      leftOut: { noCodeOfItsOwn, alsoIdle, onlyRead },
    };
    if (json) process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else printText(result);
    return 0;
  } finally {
    hold.release();
    await server.close().catch((err: Error) => process.stderr.write(`trace:request: closing the service failed: ${err.message}\n`));
    coverage.stop();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`trace:request: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
