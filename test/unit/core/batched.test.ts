import { batched } from '../../../src/projections/batched';

async function* source(items: number[], gapAfter: number) {
  for (const i of items) {
    if (i === gapAfter) await new Promise((r) => setTimeout(r, 20));
    yield i;
  }
}

describe('batched', () => {
  it('takes everything already available, up to the maximum', async () => {
    const out: number[][] = [];
    for await (const b of batched(source([1, 2, 3, 4, 5, 6, 7], -1), 3)) out.push(b);
    expect(out).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('yields what it has when the source goes quiet, keeping order and losing nothing', async () => {
    const out: number[][] = [];
    for await (const b of batched(source([1, 2, 3, 4, 5], 4), 10)) out.push(b);
    expect(out).toEqual([[1, 2, 3], [4, 5]]);
  });
});
