import type { GenerateParams } from '../../../src/inference/backend';
import { DemoBackend, NgramModel } from '../../../src/inference/demo/model';
import { mulberry32 } from '../../../src/inference/demo/model';
import { renderPrompt } from '../../../src/inference/prompt';

const demo = new DemoBackend();
const prompt = (text: string) =>
  renderPrompt({ config: 'service_3_pi', context: [{ type: 'Human', text }], metadata: {}, now: new Date(0) });

async function generate(over: Partial<GenerateParams>): Promise<string> {
  const p: GenerateParams = {
    config: 'service_3_pi',
    prompt: prompt('Hello, I had a long week.'),
    temperature: 1,
    topP: 0.95,
    maxTokens: 60,
    stop: [],
    seed: 1,
    signal: new AbortController().signal,
    ...over,
  };
  let out = '';
  for await (const t of demo.generate(p)) out += t;
  return out;
}

describe('the demo model', () => {
  test('is named as a demo', () => {
    expect(demo.modelName()).toBe('tollgate-demo');
  });

  test('is deterministic for a given seed', async () => {
    for (const seed of [1, 2, 99, 123456]) {
      expect(await generate({ seed })).toBe(await generate({ seed }));
    }
  });

  test('samples: different seeds give different replies at temperature 1', async () => {
    const replies = new Set<string>();
    for (let seed = 0; seed < 20; seed++) replies.add(await generate({ seed, temperature: 1, topP: 1 }));
    expect(replies.size).toBeGreaterThan(5);
  });

  test('is greedy at temperature 0 and at top_p 0, whatever the seed', async () => {
    const greedy = await generate({ seed: 1, temperature: 0 });
    for (const seed of [2, 3, 4, 5]) expect(await generate({ seed, temperature: 0 })).toBe(greedy);
    expect(await generate({ seed: 9, topP: 0 })).toBe(greedy);
  });

  test('the two configs sound different', async () => {
    const pi = await generate({ temperature: 0 });
    const prod = await generate({ temperature: 0, config: 'service_3_productivity' });
    expect(pi).not.toBe(prod);
  });

  test('stops when the signal aborts', async () => {
    const ac = new AbortController();
    let n = 0;
    for await (const _ of demo.generate({
      config: 'service_3_pi',
      prompt: prompt('hi'),
      temperature: 0,
      topP: 1,
      maxTokens: 1000,
      stop: [],
      seed: 1,
      signal: ac.signal,
    })) {
      if (++n === 3) ac.abort();
    }
    expect(n).toBe(3);
  });
});

describe('sampling', () => {
  const d = { tokens: [10, 20, 30], weights: [6, 3, 1] };
  const freq = (temperature: number, topP: number) => {
    const rand = mulberry32(7);
    const counts = new Map<number, number>();
    for (let i = 0; i < 20000; i++) {
      const t = NgramModel.sample(d, temperature, topP, rand);
      counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    return (t: number) => (counts.get(t) ?? 0) / 20000;
  };

  test('temperature 1 follows the counts', () => {
    const f = freq(1, 1);
    expect(f(10)).toBeCloseTo(0.6, 1);
    expect(f(20)).toBeCloseTo(0.3, 1);
    expect(f(30)).toBeCloseTo(0.1, 1);
  });

  test('a lower temperature sharpens the distribution', () => {
    expect(freq(0.3, 1)(10)).toBeGreaterThan(0.85);
  });

  test('top_p keeps only the most likely tokens covering that mass', () => {
    const f = freq(1, 0.6);
    expect(f(10)).toBe(1);
    const g = freq(1, 0.85);
    expect(g(30)).toBe(0);
    expect(g(20)).toBeGreaterThan(0.2);
  });

  test('temperature 0 is argmax', () => {
    expect(freq(0, 1)(10)).toBe(1);
  });
});
