import { ConfigError, loadConfig } from '../../../src/platform/config';
import { redisTargetOf } from '../../../src/platform/redis';

describe('loadConfig', () => {
  it('gives the embedded defaults when nothing is set', () => {
    const c = loadConfig({}, {});
    expect(c.EVENT_STORE).toBe('sqlite');
    expect(c.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(c.PORT).toBe(8080);
    expect(c.PRICE_INPUT_NANO_USD_PER_TOKEN).toBe(2500n);
    expect(c.PRICE_OUTPUT_NANO_USD_PER_TOKEN).toBe(10000n);
    expect(c.RATE_LIMIT_PER_MINUTE).toBe(100);
  });

  it('reports one line per bad setting, naming it', () => {
    let err: unknown;
    try {
      loadConfig({}, { PORT: 'abc', REDIS_URL: 'localhost:6379', ROLE: 'boss' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const lines = (err as ConfigError).lines;
    expect(lines).toHaveLength(3);
    expect(lines.some((l) => l.startsWith('invalid setting PORT:'))).toBe(true);
    expect(lines.some((l) => l.startsWith('invalid setting REDIS_URL:') && l.includes('localhost:6379'))).toBe(true);
    expect(lines.some((l) => l.startsWith('invalid setting ROLE:'))).toBe(true);
  });

  it('requires a connection string for EventStoreDB and checks its form', () => {
    expect(() => loadConfig({}, { EVENT_STORE: 'esdb' })).toThrow(/EVENTSTORE_CONNECTION_STRING: is required/);
    expect(() => loadConfig({}, { EVENT_STORE: 'esdb', EVENTSTORE_CONNECTION_STRING: 'nonsense' })).toThrow(
      /invalid setting EVENTSTORE_CONNECTION_STRING: must look like esdb:\/\//,
    );
    expect(loadConfig({}, { EVENT_STORE: 'esdb', EVENTSTORE_CONNECTION_STRING: 'esdb://localhost:2113?tls=false' }).EVENT_STORE).toBe(
      'esdb',
    );
  });

  it('requires DATABASE_URL for PostgreSQL, checks its form and never echoes its password', () => {
    expect(() => loadConfig({}, { EVENT_STORE: 'postgres' })).toThrow(
      /^invalid setting DATABASE_URL: is required when EVENT_STORE=postgres$/,
    );
    expect(() => loadConfig({}, { EVENT_STORE: 'postgres', DATABASE_URL: 'mysql://u:hunter2@db/x' })).toThrow(
      /^invalid setting DATABASE_URL: must look like postgres:\/\/.*\(got "mysql:\/\/\*\*\*@db\/x"\)$/,
    );
    const c = loadConfig({}, { EVENT_STORE: 'postgres', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/tollgate' });
    expect([c.EVENT_STORE, c.DATABASE_URL]).toEqual(['postgres', 'postgres://postgres@127.0.0.1:5432/tollgate']);
  });

  it('reads REDIS_CLUSTER_NODES as host:port seeds, naming it when malformed; unset, REDIS_URL is the target', () => {
    expect(() => loadConfig({}, { REDIS_CLUSTER_NODES: '127.0.0.1:7001,localhost' })).toThrow(
      /^invalid setting REDIS_CLUSTER_NODES: must be host:port,host:port,… .*\(got "127\.0\.0\.1:7001,localhost"\)$/,
    );
    const c = loadConfig({}, { REDIS_CLUSTER_NODES: ' a:1, b:2 ', REDIS_URL: 'redis://x:6379/3' });
    expect(c.REDIS_CLUSTER_NODES).toEqual(['a:1', 'b:2']);
    expect(redisTargetOf(c)).toEqual({ clusterNodes: ['a:1', 'b:2'] });
    expect(redisTargetOf(loadConfig({}, {}))).toBe('redis://127.0.0.1:6379');
  });

  it('never echoes a secret value in its error', () => {
    expect(() => loadConfig({}, { STRIPE_SECRET_KEY: 'pk_live_oops' })).toThrow(/STRIPE_SECRET_KEY: must start with sk_ \(got "\*\*\*"\)/);
  });

  it('lets overrides win over the environment and treats empty strings as unset', () => {
    const c = loadConfig({ ROLE: 'api' }, { ROLE: 'worker', PORT: '' });
    expect(c.ROLE).toBe('api');
    expect(c.PORT).toBe(8080);
  });
});
