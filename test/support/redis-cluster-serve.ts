/**
 * npm run redis:cluster — a 3-primary Redis Cluster on free ports for development, until Ctrl-C.
 * With TEST_REDIS_CLUSTER_NODES exported as it prints, `npm test` uses it instead of starting its
 * own. Options: --primaries <n> (3).
 */
import { startRedisCluster } from './redis-cluster';

const i = process.argv.indexOf('--primaries');
const primaries = i > 0 ? Number(process.argv[i + 1]) : 3;

startRedisCluster(primaries).then(
  (cluster) => {
    const nodes = cluster.nodes.join(',');
    process.stdout.write(
      `Redis Cluster up (${primaries} primaries, no replicas, no persistence):\n  export TEST_REDIS_CLUSTER_NODES=${nodes}\n  REDIS_CLUSTER_NODES=${nodes}\nCtrl-C stops it.\n`,
    );
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cluster.stop().then(() => process.exit(0)));
  },
  (err: Error) => {
    process.stderr.write(`redis:cluster: ${err.message}\n`);
    process.exit(1);
  },
);
