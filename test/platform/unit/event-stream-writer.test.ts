import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { EventStreamWriter } from '../../../src/platform/http/sse';

/** A response whose socket takes a write while `accept` says so. */
function fakeResponse() {
  const res = Object.assign(new EventEmitter(), {
    accept: true,
    written: [] as string[],
    destroyed: false,
    writableEnded: false,
    status: () => res,
    setHeader: () => res,
    flushHeaders: () => undefined,
    write: (frame: string) => {
      res.written.push(frame);
      return res.accept;
    },
    end: () => void (res.writableEnded = true),
  });
  return res;
}

test('a frame the socket takes costs no promise; a full socket gives one that settles on drain', async () => {
  const res = fakeResponse();
  const writer = new EventStreamWriter(res as unknown as Response);
  expect(writer.write('data: 1\n\n')).toBeUndefined();
  res.accept = false;
  const full = writer.write('data: 2\n\n');
  expect(full).toBeInstanceOf(Promise);
  let drained = false;
  void full!.then(() => (drained = true));
  await Promise.resolve();
  expect(drained).toBe(false);
  res.emit('drain');
  await full;
  expect(drained).toBe(true);
  expect(res.written).toEqual(['data: 1\n\n', 'data: 2\n\n']);
});

test('a write after the caller left throws at once; send rejects', async () => {
  const res = fakeResponse();
  const writer = new EventStreamWriter(res as unknown as Response);
  res.destroyed = true;
  expect(() => writer.write('data: 1\n\n')).toThrow('the caller is gone');
  await expect(writer.send({ a: 1 })).rejects.toThrow('the caller is gone');
});
