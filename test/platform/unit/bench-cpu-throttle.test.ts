import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CGROUP_PREFIX,
  cfsQuota,
  CgroupThrottle,
  defaultPeriodMs,
  detectCgroupCpu,
  quotaFiles,
  removeStale,
  writable,
} from '../../bench/cpu-throttle';

/**
 * bench:cluster's cgroup CPU throttle (test/bench/cpu-throttle.ts): the quota arithmetic and the
 * v1/v2 detection on fake hierarchies everywhere; a real quota on a busy process only where this
 * process may make cgroups (root with a writable cpu controller), else that test is skipped.
 */
describe('cgroup CPU throttle (bench helper)', () => {
  it('turns a share and a period into a quota within the kernel limits', () => {
    expect(cfsQuota(0.1, 20)).toEqual({ periodUs: 20_000, quotaUs: 2_000 });
    expect(cfsQuota(0.02, 50)).toEqual({ periodUs: 50_000, quotaUs: 1_000 });
    expect(cfsQuota(1, 100)).toEqual({ periodUs: 100_000, quotaUs: 100_000 });
    // Under 1 ms of quota the kernel refuses the write: said before, with the period that works.
    expect(() => cfsQuota(0.02, 20)).toThrow(/at least 50 ms/);
    expect(() => cfsQuota(0.5, 0.5)).toThrow(/1-1000 ms/);
    expect(() => cfsQuota(0.5, 2000)).toThrow(/1-1000 ms/);
    expect(() => cfsQuota(0, 100)).toThrow(/not in/);
  });

  it('defaults to the shortest period of at least 20 ms whose quota is 1 ms or more', () => {
    expect(defaultPeriodMs(0.5)).toBe(20);
    expect(defaultPeriodMs(0.05)).toBe(20);
    expect(defaultPeriodMs(0.02)).toBe(50);
    expect(defaultPeriodMs(0.03)).toBe(34);
    expect(defaultPeriodMs(0.01)).toBe(100);
    for (const share of [0.01, 0.02, 0.03, 0.07, 0.5]) expect(() => cfsQuota(share, defaultPeriodMs(share))).not.toThrow();
  });

  it('writes cpu.max on v2, the period before the quota on v1', () => {
    const q = { periodUs: 50_000, quotaUs: 1_000 };
    expect(quotaFiles(2, q)).toEqual([['cpu.max', '1000 50000']]);
    expect(quotaFiles(1, q)).toEqual([
      ['cpu.cfs_period_us', '50000'],
      ['cpu.cfs_quota_us', '1000'],
    ]);
  });

  describe('detection on fake hierarchies', () => {
    let root: string;
    beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'cgroup-fake-'))));
    afterEach(() => rmSync(root, { recursive: true, force: true }));
    const file = (path: string, text = '') => {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), text);
    };

    it('v2 when the root lists the cpu controller', () => {
      file('cgroup.controllers', 'cpuset cpu io memory pids\n');
      expect(detectCgroupCpu(root)).toEqual({ version: 2, dir: root });
    });

    it('v1 on a hybrid host whose v2 tree has no cpu controller', () => {
      file('cgroup.controllers', 'memory\n');
      file('cpu/cpu.cfs_quota_us', '-1\n');
      expect(detectCgroupCpu(root)).toEqual({ version: 1, dir: join(root, 'cpu') });
    });

    it('v1 with cpu and cpuacct mounted together', () => {
      file('cpu,cpuacct/cpu.cfs_quota_us', '-1\n');
      expect(detectCgroupCpu(root)).toEqual({ version: 1, dir: join(root, 'cpu,cpuacct') });
    });

    it('none without a cpu controller', () => {
      file('memory/memory.limit_in_bytes', '0\n');
      expect(detectCgroupCpu(root)).toBeNull();
    });

    it('removes the empty cgroups of benches that are gone, and nothing else', () => {
      const gone = 2 ** 22 + 12345; // above the default pid_max: no such process
      for (const name of [
        `${CGROUP_PREFIX}-${gone}-0`,
        `${CGROUP_PREFIX}-probe-${gone}`,
        `${CGROUP_PREFIX}-${process.pid}-0`,
        'someone-else',
      ])
        mkdirSync(join(root, name));
      expect(removeStale({ version: 1, dir: root }).sort()).toEqual([`${CGROUP_PREFIX}-${gone}-0`, `${CGROUP_PREFIX}-probe-${gone}`]);
      expect(existsSync(join(root, `${CGROUP_PREFIX}-${process.pid}-0`))).toBe(true);
      expect(existsSync(join(root, 'someone-else'))).toBe(true);
    });
  });

  const cg = detectCgroupCpu();
  const real = cg !== null && writable(cg) ? it : it.skip;
  real('holds a busy process to its share, and removes its cgroup on release', async () => {
    // Spins for 2 s of wall time and says how much CPU it got; 10% of 20 ms periods.
    const child = spawn(
      process.execPath,
      [
        '-e',
        'const t = Date.now(); const c0 = process.cpuUsage(); while (Date.now() - t < 2000); const c = process.cpuUsage(c0); console.log(c.user + c.system)',
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const t = new CgroupThrottle(cg!, 0.1, 20);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    try {
      t.add(child.pid!);
      await new Promise((r) => child.once('exit', r));
      const [stat] = t.stats();
      expect(stat.throttled).toBeGreaterThan(10);
      // Unthrottled it would use ~2 s (less on a loaded box); held, ~0.2 s plus its start before add().
      expect(Number(out) / 1e6).toBeLessThan(0.6);
    } finally {
      child.kill('SIGKILL');
      t.release();
    }
    expect(readdirSync(cg!.dir).filter((n) => n.startsWith(`${CGROUP_PREFIX}-${process.pid}-`))).toEqual([]);
  });
});
