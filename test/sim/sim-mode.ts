// The module object itself (an ES namespace import would be a read-only view of it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const crypto = require('node:crypto') as typeof import('node:crypto');
import { sep } from 'node:path';
import { Prng } from './prng';
import type { World } from './world';

/**
 * Simulation mode for the whole process: timers run on the world's virtual clock, real
 * setImmediate callbacks are counted (so the world knows when the event loop is drained), and the
 * sources of nondeterminism throw when money-path code (anything under src/) calls them directly:
 * Date.now, Math.random, crypto.randomUUID. Production code takes time and ids from Services
 * (now, newId), which the simulator drives.
 */

export class Nondeterminism extends Error {
  override readonly name = 'Nondeterminism';
}

const SRC = `${sep}src${sep}`;
let world: World | null = null;
let installed = false;
/** Bytes for src/'s crypto.randomBytes (key secrets, tokens): a generator of the world's seed, apart from its draws. */
let secretBytes: Prng | null = null;
/** The first nondeterminism caught since `enter` (the caller may have swallowed the throw: a 503). */
let caught: string | null = null;

/** What the guard threw first in this world, if anything: the schedule fails on it (schedule.ts). */
export function nondeterminismCaught(): string | null {
  return caught;
}

/** The file of the function that called the function that calls this. */
function callerFile(): string {
  const saved = Error.prepareStackTrace;
  const savedLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 4;
  Error.prepareStackTrace = (_e, frames) => frames;
  const holder: { stack?: NodeJS.CallSite[] } = {};
  Error.captureStackTrace(holder, callerFile);
  const frames = holder.stack ?? [];
  Error.prepareStackTrace = saved;
  Error.stackTraceLimit = savedLimit;
  // frames[0] is the patched function, frames[1] its caller.
  return frames[1]?.getFileName() ?? '';
}

function guarded<F extends (...a: never[]) => unknown>(name: string, real: F): F {
  return function (this: unknown, ...args: never[]) {
    if (world) {
      const file = callerFile();
      if (file.includes(SRC) && !file.includes(`${sep}node_modules${sep}`)) {
        const message = `${name} called from ${file} in simulation: take it from Services (now, newId) instead`;
        caught ??= message;
        throw new Nondeterminism(message);
      }
    }
    return real.apply(this, args);
  } as F;
}

const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
  dateNow: Date.now,
  random: Math.random,
  randomUUID: crypto.randomUUID,
  randomBytes: crypto.randomBytes,
};

interface VirtualHandle {
  virtual: true;
  t: ReturnType<World['setTimer']>;
  unref(): VirtualHandle;
  ref(): VirtualHandle;
  hasRef(): boolean;
  refresh(): VirtualHandle;
  [Symbol.toPrimitive](): number;
}

function handle(t: ReturnType<World['setTimer']>): VirtualHandle {
  const h: VirtualHandle = {
    virtual: true,
    t,
    unref: () => h,
    ref: () => h,
    hasRef: () => false,
    refresh: () => h,
    [Symbol.toPrimitive]: () => t.id,
  };
  return h;
}

/** Installs the patches once per process; `enter` points them at a world, `leave` at none. */
export function install(): void {
  if (installed) return;
  installed = true;
  const g = globalThis as unknown as Record<string, unknown>;
  g.setTimeout = (cb: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) =>
    world ? handle(world.setTimer(() => cb(...args), ms ?? 0, false)) : real.setTimeout(cb, ms, ...args);
  g.setInterval = (cb: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) =>
    world ? handle(world.setTimer(() => cb(...args), ms ?? 0, true)) : real.setInterval(cb, ms, ...args);
  const clear = (h: unknown) => {
    if (h && typeof h === 'object' && (h as VirtualHandle).virtual) (h as VirtualHandle).t.cleared = true;
    else real.clearTimeout(h as NodeJS.Timeout);
  };
  g.clearTimeout = clear;
  g.clearInterval = clear;
  g.setImmediate = (cb: (...a: unknown[]) => void, ...args: unknown[]) => {
    const w = world;
    if (!w) return real.setImmediate(cb, ...args);
    w.immediates++;
    let ran = false;
    const im = real.setImmediate(() => {
      ran = true;
      w.immediates--;
      cb(...args);
    });
    const clearIt = () => {
      if (!ran) {
        ran = true;
        w.immediates--;
      }
    };
    (im as unknown as { __simClear: () => void }).__simClear = clearIt;
    return im;
  };
  g.clearImmediate = (im: NodeJS.Immediate) => {
    (im as unknown as { __simClear?: () => void })?.__simClear?.();
    real.clearImmediate(im);
  };
  Date.now = guarded('Date.now', real.dateNow);
  Math.random = guarded('Math.random', real.random);
  crypto.randomUUID = guarded('crypto.randomUUID', real.randomUUID);
  // A key's secret is random bytes, and its hash names the key's record in Redis (and so a step of
  // the trace): src/ gets them from the seed, so a seed's trace hash is the same in every run.
  crypto.randomBytes = function (this: unknown, ...args: unknown[]) {
    if (world && secretBytes && typeof args[1] !== 'function') {
      const file = callerFile();
      if (file.includes(SRC) && !file.includes(`${sep}node_modules${sep}`)) {
        const out = Buffer.alloc(Number(args[0]));
        for (let i = 0; i < out.length; i++) out[i] = secretBytes.next() & 0xff;
        return out;
      }
    }
    return (real.randomBytes as (...a: unknown[]) => Buffer).apply(this, args);
  } as typeof crypto.randomBytes;
}

export function enter(w: World): void {
  install();
  world = w;
  caught = null;
  secretBytes = new Prng((w.seed ^ 0x5ec2e75) >>> 0);
}

export function leave(): void {
  world = null;
}

export const realTimers = real;
