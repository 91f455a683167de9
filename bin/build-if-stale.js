#!/usr/bin/env node
'use strict';
// Builds dist/ (tsc, then the portal with vite) only when it is missing or was built from other
// sources: `npm start` and `npx tollgate` then start in seconds on a built tree instead of
// re-running both compilers every time (47 s to ready on a loaded machine before).
//
// "Other sources" is a content hash of everything the build reads (src/, portal/, the tsconfigs,
// the lockfile), kept in dist/.build-hash after a successful build; content, not mtimes, so a
// checkout that only touches files does not rebuild and a clock skew cannot hide a change.
//
//   node bin/build-if-stale.js          build when stale (prestart, prepare, bin/tollgate.js)
//   node bin/build-if-stale.js --always build now (npm run build)
//   node bin/build-if-stale.js --check  exit 0 when fresh, 1 when stale; builds nothing
const { createHash } = require('node:crypto');
const { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { dirname, join, relative } = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = join(__dirname, '..');
const INPUTS = ['src', 'portal', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
const STAMP = join(ROOT, 'dist', '.build-hash');

function* filesUnder(path) {
  if (!existsSync(path)) return;
  if (!statSync(path).isDirectory()) return yield path;
  for (const name of readdirSync(path).sort()) {
    if (name === 'node_modules' || name === 'dist') continue;
    yield* filesUnder(join(path, name));
  }
}

function sourceHash() {
  const h = createHash('sha256');
  for (const input of INPUTS) {
    for (const file of filesUnder(join(ROOT, input))) h.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return h.digest('hex');
}

function builtHash() {
  try {
    return readFileSync(STAMP, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function run(args) {
  // Compiler output goes to stderr, so `npx tollgate … | jq` sees only the command's output.
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (r.status !== 0) throw new Error(`the build failed (node ${args.join(' ')} exited ${r.status ?? r.signal})`);
}

/**
 * The lock the browser tests take to build the portal (test/portal/browser/support/browser.ts):
 * two builds writing dist/portal at once would leave it half-written.
 */
function withBuildLock(fn) {
  const lock = join(ROOT, 'dist', '.portal-build.lock');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) {
        process.stderr.write(`tollgate: waited 300 s for ${lock}: remove it if no build is running\n`);
        process.exit(1);
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function build(hash) {
  try {
    withBuildLock(() => buildUnlocked(hash));
  } catch (err) {
    process.stderr.write(`tollgate: ${err.message}\n`);
    process.exit(1);
  }
}

function buildUnlocked(hash) {
  rmSync(STAMP, { force: true });
  // tsc never deletes what it emitted for a file that has since moved or gone.
  rmSync(join(ROOT, 'dist', 'src'), { recursive: true, force: true });
  run([join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json']);
  copyLua();
  // --configLoader runner: vite's default loader writes the bundled config to node_modules/.vite-temp,
  // and creating that folder makes node_modules newer than npm's hidden lockfile
  // (node_modules/.package-lock.json); from then on every `npx tollgate` re-read the whole
  // node_modules tree before starting (25-45 s at load 20 on 2 cores, against 4-9 s for
  // `node bin/tollgate.js`). The runner loads the config in memory; the build output is the same.
  run([join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'portal/vite.config.mts', '--configLoader', 'runner']);
  writeFileSync(STAMP, hash + '\n');
}

/**
 * tsc emits only what it compiles: the Lua scripts beside the code (src/platform/redis-scripts.ts
 * reads them from the folder of the compiled module's tree) are copied to dist/src as they are.
 */
function copyLua() {
  for (const file of filesUnder(join(ROOT, 'src'))) {
    if (!file.endsWith('.lua')) continue;
    const to = join(ROOT, 'dist', relative(ROOT, file));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(file, to);
  }
}

/** True when dist/ was built from the sources as they are now. */
function isFresh() {
  return builtHash() === sourceHash();
}

/**
 * Builds when stale. Without the compilers (an image pruned with --omit=dev) there is nothing to
 * build with, and what dist/ holds is what runs.
 */
function buildIfStale({ always = false, quiet = false } = {}) {
  const hash = sourceHash();
  if (!always && builtHash() === hash) return false;
  if (!existsSync(join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'))) return false;
  if (!quiet) {
    const why = always
      ? 'npm run build'
      : existsSync(join(ROOT, 'dist', 'src'))
        ? 'the sources changed since the last build'
        : 'dist/ is missing';
    process.stderr.write(`tollgate: building dist/ (${why})\n`);
  }
  build(hash);
  return true;
}

module.exports = { buildIfStale, isFresh, sourceHash };

if (require.main === module) {
  const arg = process.argv[2];
  if (arg === '--check') process.exit(isFresh() ? 0 : 1);
  buildIfStale({ always: arg === '--always', quiet: arg === '--always' });
}
