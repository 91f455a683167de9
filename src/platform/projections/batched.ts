const NOT_READY = Symbol('not-ready');

/**
 * Groups an async iterable into arrays: everything already available (up to `max`) goes into one
 * batch, and an idle source yields its next item alone as soon as it arrives. Under load this
 * gives large batches (one Redis MULTI each); when quiet, low latency.
 */
export async function* batched<T>(source: AsyncIterable<T>, max: number): AsyncGenerator<T[]> {
  const it = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | null = null;
  for (;;) {
    const first = await (pending ?? it.next());
    pending = null;
    if (first.done) return;
    const batch = [first.value];
    while (batch.length < max) {
      pending = it.next();
      // setImmediate lets every queued microtask run first, so items already buffered are taken.
      const next = await Promise.race([pending, new Promise<typeof NOT_READY>((r) => setImmediate(() => r(NOT_READY)))]);
      if (next === NOT_READY) break;
      pending = null;
      if (next.done) {
        yield batch;
        return;
      }
      batch.push(next.value);
    }
    yield batch;
  }
}
