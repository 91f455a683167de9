import { Command } from 'ioredis';
import type { ChainableCommander } from 'ioredis';
import { RespArgs } from '../../../src/platform/projections/resp-args';

// RespArgs writes a command's arguments as RESP bytes itself: Redis must receive exactly what
// ioredis would have sent for the same arguments.
describe('RespArgs', () => {
  /** What RespArgs queues on a pipeline, as the bytes ioredis would write. */
  function encoded(fill: (r: RespArgs) => void, head: string[]): Buffer {
    const r = new RespArgs(8); // small, so that it grows while written
    fill(r);
    const queued: Command[] = [];
    r.queue({ sendCommand: (c: Command) => queued.push(c) } as unknown as ChainableCommander, 'eval', head);
    expect(queued).toHaveLength(1);
    return Buffer.from(queued[0].toWritable({}));
  }
  const ioredis = (args: string[]) => Buffer.from(new Command('eval', args).toWritable({}));

  const samples = [
    '',
    'a',
    'tg:rm:usage:3:minute:ws-12:1764115200',
    '0123456789abcdef', // 16 characters: the byte-by-byte path
    '0123456789abcdefg', // 17: the native one
    'é',
    'ééééé', // 5 characters, 10 bytes: the header grows by a digit
    'x'.repeat(99) + 'é', // 100 characters, 101 bytes: same digits
    'x'.repeat(9) + '😀', // 11 characters, 13 bytes
    'short é€😀',
    'a long string with a non-ASCII letter at its very end: ' + 'y'.repeat(40) + 'ü',
    'x'.repeat(70_000) + '€', // past any initial capacity
    'nul\0inside',
  ];

  it('writes each argument as ioredis would', () => {
    const head = ['return 1', '0'];
    expect(encoded((r) => samples.forEach((s) => r.add(s)), head)).toEqual(ioredis([...head, ...samples]));
  });

  it('writes a joined argument as the NUL-joined string ioredis would send', () => {
    const head = ['return 1', '0'];
    const calls: Array<[string, string[], string[]]> = [
      ['0', [], []],
      ['1', ['k'], []],
      ['2', samples.slice(0, 2), samples.slice(2, 9)],
      ['0', [], samples],
      ['3', ['é', 'ééééé', ''], ['😀']],
    ];
    expect(encoded((r) => calls.forEach(([h, a, b]) => r.addJoined(h, a, b)), head)).toEqual(
      ioredis([...head, ...calls.map(([h, a, b]) => [h, ...a, ...b].join('\0'))]),
    );
  });

  it('mixes both and counts every argument', () => {
    const head = ['local n = #ARGV', '0'];
    expect(
      encoded((r) => {
        r.add('first');
        r.addJoined('1', ['k€'], ['v']);
        r.add('');
      }, head),
    ).toEqual(ioredis([...head, 'first', '1\0k€\0v', '']));
  });
});
