#!/usr/bin/env node
'use strict';
// The CLI. In a checkout, dist/ is built first when it is missing or the sources changed since
// the last build (one line on stderr says so); otherwise this starts at once.
require('./build-if-stale').buildIfStale();

// `npx tollgate serve` runs this under `sh -c`, and Debian's sh (dash) does not exec its last
// command: the SIGTERM or SIGINT that npm forwards stops the shell and would leave this process
// running, still listening. Under npm (it sets npm_command), a parent that goes away is taken as
// that signal, and the service stops as it does on SIGTERM.
if (process.env.npm_command) {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }, 250);
  watch.unref();
}

require('../dist/src/cli/index.js').main(process.argv);
