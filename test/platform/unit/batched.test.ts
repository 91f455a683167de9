import { batched } from '../../../src/platform/projections/batched';

async function* source(items: number[]) {
  yield* items;
}

describe('batched', () => {
  it('takes everything already available, up to the maximum', async () => {
    const out: number[][] = [];
    for await (const b of batched(source([1, 2, 3, 4, 5, 6, 7]), 3)) out.push(b);
    expect(out).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('yields what it has when the source goes quiet, keeping order and losing nothing', async () => {
    // The source goes quiet until the consumer has seen a batch: no timer, so a loaded machine
    // cannot make the gap look shorter than the batcher's wait.
    let release!: () => void;
    const quiet = new Promise<void>((r) => (release = r));
    async function* gated() {
      yield* [1, 2, 3];
      await quiet;
      yield* [4, 5];
    }
    const out: number[][] = [];
    for await (const b of batched(gated(), 10)) {
      out.push(b);
      release();
    }
    expect(out).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });
});
