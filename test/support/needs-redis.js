// jest globalSetup of the projects that use Redis (int, contract, e2e, browser): without a Redis,
// one line says so and the run stops, instead of every test file failing on its own.
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
};
