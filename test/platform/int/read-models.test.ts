import { ActiveGenerations, GENERATION_CACHE_MS, ReadModels } from '../../../src/platform/projections/read-models';
import { projectionEnv, ProjectionEnv } from '../../support/fixtures/env';
import { commandsRun } from '../../support/redis-monitor';

let env: ProjectionEnv;
beforeEach(() => {
  env = projectionEnv();
});
afterEach(async () => {
  await env.dispose();
});

/** ReadModels.read: one round trip in the generation seen last, checked against the pointer in the same script. */
describe('ReadModels.read', () => {
  const put = (gen: string, value: string) => env.redis.hset(env.ks.rm('m', gen, 'ws', 'a'), 'balance', value);
  const read = async (rm: ReadModels) => ((await rm.read('m', (k) => [['hgetall', k('ws', 'a')]]))[0] as Record<string, string>).balance;

  test('reads the active generation, and follows a switch made after its last read', async () => {
    const rm = new ReadModels(env.redis, env.ks);
    await put('0', 'zero');
    expect(await read(rm)).toBe('zero'); // no pointer yet: generation 0
    await put('1', 'one');
    await env.redis.set(env.ks.active('m'), '1');
    expect(await read(rm)).toBe('one');
    await put('2', 'two');
    await env.redis.set(env.ks.active('m'), '2');
    expect(await read(rm)).toBe('two');
    expect(await rm.gen('m')).toBe('2');
  });

  test('returns each queued reply in order, and throws a command error instead of returning it', async () => {
    const rm = new ReadModels(env.redis, env.ks);
    await env.redis.set(env.ks.rm('m', '0', 'x'), '7');
    await put('0', 'zero');
    expect(
      await rm.read('m', (k) => [
        ['get', k('x')],
        ['get', k('missing')],
        ['hget', k('ws', 'a'), 'balance'],
        ['hgetall', k('ws', 'a')],
        ['hgetall', k('missing')],
      ]),
    ).toEqual(['7', null, 'zero', { balance: 'zero' }, {}]);
    await expect(rm.read('m', (k) => [['hgetall', k('x')]])).rejects.toThrow(/WRONGTYPE/);
  });

  test("reads issued together (a debit's reactions, side by side) leave in one socket write", async () => {
    const redis = env.connect();
    const rm = new ReadModels(redis, env.ks);
    for (const [i, v] of ['zero', 'one', 'two'].entries()) await redis.hset(env.ks.rm('m', '0', 'ws', String(i)), 'balance', v);
    await rm.read('m', (k) => [['get', k('warm-up')]]); // the generation seen, the script loaded
    await new Promise((r) => setImmediate(r));
    // What the socket hands the kernel: one call per write()/writev().
    const socket = redis.stream as unknown as { _write: (...a: unknown[]) => unknown; _writev: (...a: unknown[]) => unknown };
    const calls: string[] = [];
    for (const m of ['_write', '_writev'] as const) {
      const orig = socket[m];
      socket[m] = function (this: unknown, ...a: unknown[]) {
        calls.push(m);
        return orig.apply(this, a);
      };
    }
    const values = await Promise.all([0, 1, 2].map((i) => rm.read('m', (k) => [['hget', k('ws', String(i)), 'balance']])));
    expect(values).toEqual([['zero'], ['one'], ['two']]);
    expect(calls).toEqual(['_writev']);
    // and a read on its own is not held back
    calls.length = 0;
    expect(await rm.read('m', (k) => [['hget', k('ws', '0'), 'balance']])).toEqual(['zero']);
    expect(calls.length).toBe(1);
  });
  test('with ifFirst, a first read that finds nothing is the only read made; one that finds something, all are', async () => {
    const rm = new ReadModels(env.redis, env.ks);
    await env.redis.set(env.ks.rm('m', '0', 'budget'), '100');
    await env.redis.hset(env.ks.rm('m', '0', 'spend'), 'd', '7');
    const reads = (first: string) =>
      rm.read(
        'm',
        (k) => [
          ['get', k(first)],
          ['get', k('period')],
          ['hget', k('spend'), 'd'],
        ],
        { ifFirst: true },
      );
    await reads('budget'); // the generation seen, the script loaded
    const none = await commandsRun(env.ks.prefix, async () => expect(await reads('no-budget')).toEqual([null, null, null]));
    expect(none.map((c) => c[0])).toEqual(['evalsha', 'get', 'get']);
    const some = await commandsRun(env.ks.prefix, async () => expect(await reads('budget')).toEqual(['100', null, '7']));
    expect(some.map((c) => c[0])).toEqual(['evalsha', 'get', 'get', 'get', 'hget']);
  });
});

/**
 * ActiveGenerations: the generation a request-path caller names, kept GENERATION_CACHE_MS on the
 * caller's clock (Services.now). On Date.now, the simulator's guard failed every admission (each
 * inference answered 503) and a simulated clock could not age the cache.
 */
describe('ActiveGenerations', () => {
  test('keeps a generation for GENERATION_CACHE_MS of the clock it is given, then reads the pointer again', async () => {
    let now = 5_000_000;
    const gens = new ActiveGenerations(env.redis, env.ks, () => now);
    expect(await gens.get('m')).toBe('0'); // no pointer yet
    await env.redis.set(env.ks.active('m'), '3');
    now += GENERATION_CACHE_MS - 1;
    expect(await gens.get('m')).toBe('0'); // still the one seen, however much real time passed
    now += 1;
    expect(await gens.get('m')).toBe('3');
    await env.redis.set(env.ks.active('m'), '4');
    now -= 10; // a clock that went back does not keep the generation longer
    expect(await gens.get('m')).toBe('4');
  });
});
