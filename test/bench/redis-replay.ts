/**
 * bench:redis's per-script CPU: the first live batch's EVALs (as the projector queued them) and the
 * reactors' read scripts, captured as they are sent, then replayed many times each against the
 * bench's redis-server with its CPU (getrusage) read around each run. CPU is not inflated by the
 * server being preempted, as the wall-time µs of SLOWLOG and commandstats are on a busy machine.
 * Replays write again what the batch wrote (increments add up, released holds are gone): a script
 * whose path depends on what it finds may run shorter the second time, so these are lower bounds
 * for the scripts that release or clear.
 */
import { Command, Redis } from 'ioredis';
import { RespArgs } from '../../src/platform/projections/resp-args';

export interface Captured {
  name: string;
  command: 'eval' | 'evalsha';
  args: string[];
  /** Calls packed into this one EVAL (a batch script), or 1. */
  calls: number;
}

/** Per script the sample with the fewest packed calls and the one with the most. */
const captured = new Map<string, { few: Captured; most: Captured }>();

function keep(c: Captured): void {
  const seen = captured.get(c.name);
  if (!seen) captured.set(c.name, { few: c, most: c });
  else if (c.calls < seen.few.calls) seen.few = c;
  else if (c.calls > seen.most.calls) seen.most = c;
}
let capturing = false;

/** Captures the next batch's scripts and the reactors' reads (one sample of each name). */
export function captureScripts(on: boolean): void {
  capturing = on;
}

export function capturedScripts(): Array<{ few: Captured; most: Captured }> {
  return [...captured.values()];
}

/** The RESP bulk strings `$n\r\n…\r\n` of `bytes`, as strings. */
function bulkStrings(bytes: Buffer): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < bytes.length) {
    const eol = bytes.indexOf('\r\n', at);
    const n = Number(bytes.toString('latin1', at + 1, eol));
    out.push(bytes.toString('utf8', eol + 2, eol + 2 + n));
    at = eol + 2 + n + 2;
  }
  return out;
}

/** Hooks what is sent; `nameOf` names a script text, `nameOfSha` a digest. */
export function installCapture(
  nameOf: (lua: string) => string,
  readScripts: ReadonlySet<string>,
  nameOfSha: (sha: string) => string,
): void {
  const resp = RespArgs.prototype as unknown as {
    queue(multi: unknown, name: string, head: readonly string[]): void;
    buf: Buffer;
    len: number;
    count: number;
  };
  const queue = resp.queue;
  resp.queue = function (this: { buf: Buffer; len: number; count: number }, multi: unknown, name: string, head: readonly string[]) {
    if (capturing && name === 'eval') {
      const args = bulkStrings(Buffer.from(this.buf.subarray(0, this.len)));
      keep({ name: nameOf(head[0]), command: 'eval', args: [...head, ...args], calls: Math.max(1, args.length) });
    }
    return queue.call(this, multi, name, head);
  };
  // ioredis's defined scripts go out as EVALSHA Commands (their toWritable ends in Command's).
  const proto = Command.prototype as unknown as { toWritable(socket: unknown): unknown };
  const toWritable = proto.toWritable;
  proto.toWritable = function (this: { name: string; args: unknown[] }, socket: unknown) {
    if (capturing && this.name === 'evalsha') {
      const name = nameOfSha(String(this.args[0]));
      if (readScripts.has(name) && !captured.has(name)) keep({ name, command: 'evalsha', args: this.args.map(String), calls: 1 });
    }
    return toWritable.call(this, socket);
  };
}

export interface ScriptCpu {
  /** Packed calls in the small and the large sample, and the CPU µs per EVAL of each. */
  few: { calls: number; us: number };
  most: { calls: number; us: number };
  /** From the two samples: µs per EVAL whatever it holds, and µs per packed call (null: one sample). */
  fixed: number | null;
  perCall: number | null;
}

/** CPU µs of each captured sample, `times` runs each, alternating over `rounds`; fixed and per-call parts. */
export async function replayCosts(r: Redis, times = 100, rounds = 3): Promise<Map<string, ScriptCpu>> {
  const samples = capturedScripts().flatMap(({ few, most }) => (few === most ? [few] : [few, most]));
  const us = await replay(r, samples, times, rounds);
  const out = new Map<string, ScriptCpu>();
  for (const { few, most } of capturedScripts()) {
    const a = { calls: few.calls, us: us.get(few)! };
    const b = { calls: most.calls, us: us.get(most)! };
    const perCall = b.calls > a.calls ? (b.us - a.us) / (b.calls - a.calls) : null;
    out.set(few.name, { few: a, most: b, perCall, fixed: perCall === null ? null : a.us - perCall * a.calls });
  }
  return out;
}

/** CPU µs per run of each sample, `times` runs each, alternating over `rounds` (median). */
async function replay(r: Redis, scripts: Captured[], times: number, rounds: number): Promise<Map<Captured, number>> {
  const cpu = async () => {
    const info = await r.info('cpu');
    const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
    return (num('used_cpu_user') + num('used_cpu_sys')) * 1e6;
  };
  const runs = new Map<Captured, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const s of scripts) {
      const p = r.pipeline();
      for (let i = 0; i < times; i++) p.call(s.command.toUpperCase(), ...s.args);
      const before = await cpu();
      await p.exec();
      const after = await cpu();
      runs.set(s, [...(runs.get(s) ?? []), (after - before) / times]);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return new Map(scripts.map((s) => [s, median(runs.get(s)!)]));
}
