// jest globalSetup of the projects that use Redis (int, contract, e2e): without a Redis, one line
// says so and the run stops, instead of every test file failing on its own. Then it starts the
// run's Redis Cluster (3 primaries on free ports, ./redis-cluster.ts), unless TEST_REDIS_CLUSTER_NODES
// already names one (`npm run redis:cluster`); global-teardown.js stops it after the leak check.
const { Redis } = require('ioredis');

const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

module.exports = async () => {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 10_000 });
  let cause; // the socket's error (ECONNREFUSED …), not ioredis's "Connection is closed"
  redis.on('error', (err) => (cause ??= err));
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    console.error(
      `\nnpm test needs Redis at ${url} (REDIS_URL) for the integration, contract, end-to-end and browser tests: ${(cause ?? err).message.replace(/\.$/, '')}. ` +
        'Start one (redis-server --daemonize yes) or run bash .ci/run, which does; npm run test:unit runs without it.',
    );
    process.exit(1);
  } finally {
    redis.disconnect();
  }
  globalThis.__tollgateUsesRedis = true;
  if (process.env.TEST_REDIS_CLUSTER_NODES) return;
  const { startRedisCluster } = require('./redis-cluster');
  try {
    const cluster = await startRedisCluster(3);
    globalThis.__tollgateRedisCluster = cluster;
    process.env.TEST_REDIS_CLUSTER_NODES = cluster.nodes.join(',');
  } catch (err) {
    console.error(
      `\nnpm test starts a 3-node Redis Cluster (redis-server --cluster-enabled yes, redis-cli --cluster create) and could not: ${err.message}. ` +
        'Install redis-server and redis-cli (bash .ci/run does), or point TEST_REDIS_CLUSTER_NODES=host:port,… at a running cluster.',
    );
    process.exit(1);
  }
};
