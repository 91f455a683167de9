/**
 * A CPU quota for a bench's child processes through the kernel's CFS bandwidth control: one cgroup
 * per process, `quota = share × period` of CPU time per period (cgroup v1 `cpu.cfs_quota_us` /
 * `cpu.cfs_period_us`, cgroup v2 `cpu.max`).
 *
 * Why not SIGSTOP/SIGCONT windows (what `cpulimit` does): a stopped process also stops waiting. A
 * Redis or PostgreSQL reply that arrives during the stop is read only in the next window, so a
 * round trip costs up to a whole period whether or not the process wanted CPU. A quota charges only
 * the CPU the process uses: waiting on a socket is free, as it is on a slow CPU, and the process is
 * held back only once it has used its share of the period.
 *
 * Everything here is synchronous (a few small files), so a cgroup can be removed from an 'exit'
 * handler too. The bench needs root (or a delegated cgroup) for it; `detectCgroupCpu` + `writable`
 * say whether it can run, and the bench falls back to signals otherwise.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CgroupCpu {
  version: 1 | 2;
  /** The hierarchy's root folder the bench's cgroups are made in. */
  dir: string;
}

/** Names of the cgroups a bench makes: `<prefix>-<bench pid>-<n>`, so leftovers of a dead bench can be told apart. */
export const CGROUP_PREFIX = 'tollgate-bench';

/**
 * Where the cpu controller is: cgroup v2 when `<root>/cgroup.controllers` exists and lists `cpu`
 * (the unified hierarchy), else v1's `cpu` hierarchy (`<root>/cpu`, or `<root>/cpu,cpuacct` where
 * the two are mounted together). Null when neither is there. A hybrid host (v1 controllers, an
 * empty v2 tree at <root>/unified) is v1.
 */
export function detectCgroupCpu(root = '/sys/fs/cgroup'): CgroupCpu | null {
  const controllers = read(join(root, 'cgroup.controllers'));
  if (controllers !== null && controllers.split(/\s+/).includes('cpu')) return { version: 2, dir: root };
  for (const name of ['cpu', 'cpu,cpuacct', 'cpuacct,cpu']) {
    const dir = join(root, name);
    if (existsSync(join(dir, 'cpu.cfs_quota_us'))) return { version: 1, dir };
  }
  return null;
}

/** The kernel's limits: a period of 1 ms to 1 s, a quota of at least 1 ms. */
const MIN_US = 1000;
const MAX_PERIOD_US = 1_000_000;

/**
 * The period used when none is given: the shortest of at least 20 ms whose quota is still the
 * kernel's minimum of 1 ms (20 ms down to a 5% share, 50 ms at 2%, 100 ms at 1%). Short, so that a
 * process that used its quota waits at most one period (at 20-100 ms, far below the 250 ms lag
 * sample and the 1 s the lag target is about); not shorter, because each period end is a timer
 * and an unthrottle on every core, and a 1 ms quota is already a few batches' worth of work.
 */
export function defaultPeriodMs(share: number): number {
  return Math.max(20, Math.ceil(MIN_US / 1000 / share));
}

/** `share` of a `periodMs` period in microseconds, within the kernel's limits (else an error that says which). */
export function cfsQuota(share: number, periodMs: number): { periodUs: number; quotaUs: number } {
  if (!(share > 0 && share <= 1)) throw new Error(`CPU share ${share} is not in (0, 1]`);
  const periodUs = Math.round(periodMs * 1000);
  if (periodUs < MIN_US || periodUs > MAX_PERIOD_US) throw new Error(`a CFS period must be 1-1000 ms (got ${periodMs} ms)`);
  const quotaUs = Math.round(share * periodUs);
  if (quotaUs < MIN_US)
    throw new Error(
      `a ${share * 100}% share of ${periodMs} ms is ${quotaUs} µs, under the kernel's 1 ms minimum quota: use a period of at least ${defaultPeriodMs(share)} ms`,
    );
  return { periodUs, quotaUs };
}

/** The files to write, in order, for a quota (v1: the period before the quota, which is checked against it). */
export function quotaFiles(version: 1 | 2, q: { periodUs: number; quotaUs: number }): Array<[string, string]> {
  return version === 2
    ? [['cpu.max', `${q.quotaUs} ${q.periodUs}`]]
    : [
        ['cpu.cfs_period_us', String(q.periodUs)],
        ['cpu.cfs_quota_us', String(q.quotaUs)],
      ];
}

/**
 * Whether this process can make a cgroup with a quota there: makes one, writes a quota, removes it.
 * On v2 the root must hand the cpu controller to its children (`+cpu` in cgroup.subtree_control),
 * which this enables when it may.
 */
export function writable(cg: CgroupCpu): boolean {
  const probe = join(cg.dir, `${CGROUP_PREFIX}-probe-${process.pid}`);
  try {
    if (cg.version === 2) enableCpuForChildren(cg.dir);
    mkdirSync(probe);
  } catch {
    return false;
  }
  try {
    for (const [file, value] of quotaFiles(cg.version, cfsQuota(0.5, 100))) writeFileSync(join(probe, file), value);
    return true;
  } catch {
    return false;
  } finally {
    removeCgroup(probe);
  }
}

function enableCpuForChildren(dir: string): void {
  const control = join(dir, 'cgroup.subtree_control');
  if (!(read(control) ?? '').split(/\s+/).includes('cpu')) writeFileSync(control, '+cpu');
}

/** Cgroups left by benches that died without cleaning up (their pid is gone), removed if they are empty. */
export function removeStale(cg: CgroupCpu): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(cg.dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = new RegExp(`^${CGROUP_PREFIX}-(?:probe-)?(\\d+)(?:-\\d+)?$`).exec(name);
    if (!m || alive(Number(m[1]))) continue;
    if (removeCgroup(join(cg.dir, name), 1)) removed.push(name);
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What the kernel counted for one cgroup: periods with work, periods in which the quota ran out. */
export interface ThrottleStat {
  periods: number;
  throttled: number;
}

/**
 * One cgroup per process, each with `share` of CPU per period. `release()` moves whatever is still
 * in them back to the hierarchy's root and removes them; it is idempotent and synchronous.
 */
export class CgroupThrottle {
  private readonly dirs: string[] = [];
  private released = false;

  constructor(
    private readonly cg: CgroupCpu,
    readonly share: number,
    readonly periodMs: number,
  ) {}

  /** Puts `pid` (every thread of it) in a cgroup of its own with the quota. */
  add(pid: number): void {
    if (this.released) throw new Error('the throttle was released');
    const dir = join(this.cg.dir, `${CGROUP_PREFIX}-${process.pid}-${nextId++}`);
    mkdirSync(dir);
    this.dirs.push(dir);
    for (const [file, value] of quotaFiles(this.cg.version, cfsQuota(this.share, this.periodMs))) writeFileSync(join(dir, file), value);
    writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  }

  /** Per process added, in order: the kernel's period counts so far (zeros for a cgroup already gone). */
  stats(): ThrottleStat[] {
    return this.dirs.map((dir) => {
      const text = read(join(dir, 'cpu.stat')) ?? '';
      const field = (k: string) => Number(new RegExp(`^${k} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
      return { periods: field('nr_periods'), throttled: field('nr_throttled') };
    });
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    for (const dir of this.dirs) {
      if (!removeCgroup(dir))
        process.stderr.write(`could not remove the cgroup ${dir}: remove it with rmdir once its processes are gone\n`);
    }
  }
}

let nextId = 0;

/** Moves the cgroup's processes to its parent's root and removes it; false if it is still there after `tries`. */
function removeCgroup(dir: string, tries = 50): boolean {
  const root = join(dir, '..', 'cgroup.procs');
  for (let i = 0; i < tries; i++) {
    for (const pid of (read(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean)) {
      try {
        writeFileSync(root, pid);
      } catch {
        // it exited meanwhile
      }
    }
    try {
      rmdirSync(dir);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
      // EBUSY: a process is still leaving (exiting, or moved a moment ago)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  return false;
}

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
}
