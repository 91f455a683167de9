// jest globalSetup of the browser project (it runs only when a browser test is selected): Redis as
// for the other projects, and Chromium. Without one, Debian's chromium package is installed here
// (we run as root on this kind of machine), with one line saying so.
const { execFileSync } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const needsRedis = require('./needs-redis');

/** Where test/portal/browser/support/browser.ts looks, in the same order. */
const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean);

function stop(line) {
  console.error(`\n${line}`);
  process.exit(1);
}

function installChromium() {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !existsSync('/usr/bin/apt-get')) {
    stop(
      'The browser tests need Chromium: apt-get install -y chromium (as root), or set CHROMIUM_PATH; npm test -- --selectProjects unit int contract e2e runs without it.',
    );
  }
  console.log("\nChromium is missing: installing Debian's chromium package for the browser tests (apt-get install chromium, once).");
  const log = join(mkdtempSync(join(tmpdir(), 'tollgate-apt-')), 'apt.log');
  const apt = (args) =>
    execFileSync('sh', ['-c', `apt-get ${args} >>"${log}" 2>&1`], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: 'inherit',
    });
  try {
    // Another run may hold the dpkg lock while it installs the same package: wait for it.
    apt('-o DPkg::Lock::Timeout=600 update -qq');
    apt('-o DPkg::Lock::Timeout=600 install -y -qq chromium');
  } catch {
    const tail = readFileSync(log, 'utf8').trim().split('\n').slice(-1)[0];
    stop(`Installing chromium failed (${tail}); full output in ${log}`);
  }
  if (!CANDIDATES.some((p) => existsSync(p))) stop(`apt-get installed chromium, but none of ${CANDIDATES.join(', ')} exists`);
}

module.exports = async (...args) => {
  await needsRedis(...args);
  if (!CANDIDATES.some((p) => existsSync(p))) installChromium();
};
