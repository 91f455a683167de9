// jest globalSetup for every run: finds the PostgreSQL the PostgreSQL rows use, or says in one line
// why they are skipped. Runs in jest's parent process before the workers start, so a
// TEST_DATABASE_URL set here reaches every test file.
const { randomBytes } = require('node:crypto');
const { Client } = require('pg');

/** The local server a fresh machine of this kind runs (trust auth over TCP, as .ci/run sets up). */
const LOCAL = 'postgres://postgres@127.0.0.1:5432/postgres';

async function answers(url) {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

module.exports = async () => {
  // Every Redis prefix of this run starts with it (test/support/redis.ts), so the check at the end
  // (global-teardown.js) looks at this run's keys only, not at other runs' on the same Redis.
  process.env.TEST_RUN_PREFIX ||= `run-${randomBytes(4).toString('hex')}:`;
  if (process.env.TEST_DATABASE_URL) return;
  if (await answers(LOCAL)) {
    process.env.TEST_DATABASE_URL = LOCAL;
    console.log(`\nPostgreSQL rows run against ${LOCAL} (it answered; TEST_DATABASE_URL was not set).`);
    return;
  }
  console.log(
    `\nPostgreSQL rows skipped (event-store contract, kill test, split roles, outage): TEST_DATABASE_URL is not set and nothing answers at ${LOCAL}; .ci/run starts one.`,
  );
};
