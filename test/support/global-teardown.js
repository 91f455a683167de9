// jest globalTeardown for every run: fails the run when it left Redis keys behind (under this run's
// TEST_RUN_PREFIX, in any db of REDIS_URL's server and on every node of the test cluster), naming
// each test prefix that leaked; then stops the test cluster needs-redis.js started.
const { describeLeaks, findLeaks } = require('./redis-leaks');

module.exports = async () => {
  const cluster = globalThis.__tollgateRedisCluster;
  const runPrefix = process.env.TEST_RUN_PREFIX;
  let leaks = [];
  try {
    const nodes = (process.env.TEST_REDIS_CLUSTER_NODES || '').split(',').filter(Boolean);
    if (runPrefix) leaks = await findLeaks(runPrefix, process.env.REDIS_URL || 'redis://127.0.0.1:6379', nodes, true);
  } catch (err) {
    // A run of unit tests alone needs no Redis; one that did has already failed if Redis went away.
    if (globalThis.__tollgateUsesRedis) console.warn(`\nthe check for Redis keys left behind did not run: ${err.message}`);
  } finally {
    await cluster?.stop();
  }
  if (leaks.length) throw new Error(describeLeaks(leaks));
};
