import { Command } from 'ioredis';
import type { ChainableCommander } from 'ioredis';

/**
 * A command's arguments written as RESP bulk strings (`$<bytes>\r\n<bytes>\r\n`) into one growing
 * Buffer as they are produced, for the few large EVALs of a projection's batch (batch-writes.ts).
 *
 * Why: with ioredis a batch's arguments were JS strings held until the MULTI was sent, then
 * encoded by ioredis (a byte count and a concatenated string piece per argument) into one string
 * of the whole MULTI, flattened again to write it. Those strings outlived the young generation
 * and were most of the projector's garbage (bench:projector: about 40% of its CPU in the GC). Bytes
 * in a Buffer live outside the JS heap: the garbage collector neither copies nor marks them.
 * Redis receives exactly the bytes ioredis would have sent for the same arguments.
 */
export class RespArgs {
  private buf: Buffer;
  private len = 0;
  /** Arguments written so far. */
  count = 0;

  constructor(initialBytes = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /** One argument. */
  add(s: string): void {
    this.reserve(HEADER_MAX + s.length * 3 + 2);
    const start = this.len;
    this.len = start + headerLength(s.length);
    this.put(s);
    this.close(start, s.length);
  }

  /**
   * One argument: `head`, then NUL and each of `a`, then NUL and each of `b` (evalEach's packed
   * call), without building the joined string.
   */
  addJoined(head: string, a: readonly string[], b: readonly string[]): void {
    let chars = head.length + a.length + b.length;
    for (let i = 0; i < a.length; i++) chars += a[i].length;
    for (let i = 0; i < b.length; i++) chars += b[i].length;
    this.reserve(HEADER_MAX + chars * 3 + 2);
    const start = this.len;
    // Written for `chars` bytes (ASCII), corrected by close() when the text was not.
    this.len = start + headerLength(chars);
    this.put(head);
    const buf = this.buf;
    for (let i = 0; i < a.length; i++) {
      buf[this.len++] = 0;
      this.put(a[i]);
    }
    for (let i = 0; i < b.length; i++) {
      buf[this.len++] = 0;
      this.put(b[i]);
    }
    this.close(start, chars);
  }

  /**
   * Queues `name` with `head` (its first arguments, e.g. the script and numkeys) then every
   * argument written here, on `multi` (a MULTI or a pipeline), as one command. Nothing more may
   * be added afterwards.
   */
  queue(multi: ChainableCommander, name: string, head: readonly string[]): void {
    let prefix = `*${1 + head.length + this.count}\r\n$${Buffer.byteLength(name)}\r\n${name}\r\n`;
    for (const h of head) prefix += `$${Buffer.byteLength(h)}\r\n${h}\r\n`;
    const bytes = Buffer.concat([Buffer.from(prefix), this.buf.subarray(0, this.len)]);
    (multi as unknown as { sendCommand(c: Command): unknown }).sendCommand(new EncodedCommand(name, head, this.count, bytes));
  }

  private reserve(bytes: number): void {
    if (this.len + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + bytes));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  /** Writes `s` as UTF-8 at the end. */
  private put(s: string): void {
    const n = s.length;
    // Short strings byte by byte (a native write costs more than the copy), longer ones natively.
    if (n <= 16) {
      const buf = this.buf;
      const o = this.len;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) {
          this.len = o + buf.write(s, o);
          return;
        }
        buf[o + i] = c;
      }
      this.len = o + n;
      return;
    }
    this.len += this.buf.write(s, this.len);
  }

  /**
   * Ends the argument whose header was written at `start` for `guess` bytes: rewrites the header
   * with the bytes actually written (moving them if it is longer or shorter), then CRLF.
   */
  private close(start: number, guess: number): void {
    const guessed = headerLength(guess);
    const bytes = this.len - start - guessed;
    if (bytes !== guess) {
      const need = headerLength(bytes);
      if (need !== guessed) {
        this.buf.copyWithin(start + need, start + guessed, this.len);
        this.len += need - guessed;
      }
      writeHeader(this.buf, start, bytes);
    } else writeHeader(this.buf, start, guess);
    this.buf[this.len++] = 0x0d;
    this.buf[this.len++] = 0x0a;
    this.count++;
  }
}

/** `$` + up to 10 digits + CRLF. */
const HEADER_MAX = 13;

function headerLength(bytes: number): number {
  let digits = 1;
  for (let n = bytes; n >= 10; n = Math.floor(n / 10)) digits++;
  return digits + 3;
}

function writeHeader(buf: Buffer, at: number, bytes: number): void {
  const end = at + headerLength(bytes) - 2;
  buf[at] = 0x24; // $
  let n = bytes;
  for (let i = end - 1; i > at; i--) {
    buf[i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  buf[end] = 0x0d;
  buf[end + 1] = 0x0a;
}

/**
 * An ioredis command whose wire form is already built: ioredis writes these bytes as they are
 * (Redis.sendCommand calls toWritable; a pipeline concatenates the Buffers). Its reply is handled
 * like any other command's.
 */
class EncodedCommand extends Command {
  constructor(
    name: string,
    head: readonly string[],
    count: number,
    private readonly bytes: Buffer,
  ) {
    // The arguments ioredis would log or trace: the head and how many more follow.
    super(name, [...head, `(${count} more arguments)`]);
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}
