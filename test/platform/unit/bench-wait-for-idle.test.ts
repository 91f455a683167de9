import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { waitForIdle } from '../../bench/bench-http';

/**
 * bench:peer's sequential phases start once the target process is idle (test/bench/bench-http.ts):
 * a process still busy with the load before must be waited for, an idle one not for long.
 */
describe('waitForIdle (bench helper)', () => {
  it('returns only after a busy process has gone idle', async () => {
    // Spins until it has used 1.5 s of CPU (however long the machine's load makes that), then idles.
    const child = spawn(
      process.execPath,
      [
        '-e',
        "const c0 = process.cpuUsage(); while (process.cpuUsage(c0).user < 1.5e6); console.log('idle'); setTimeout(() => undefined, 600000)",
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let idleSaid = false;
    createInterface({ input: child.stdout! }).on('line', (l) => (idleSaid ||= l === 'idle'));
    try {
      await waitForIdle(child.pid!, { windowMs: 250, windows: 2, maxPercent: 8 });
      expect(idleSaid).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('gives up after its timeout on a process that never goes idle', async () => {
    const child = spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' });
    try {
      const waited = await waitForIdle(child.pid!, { windowMs: 100, windows: 2, maxPercent: 1, timeoutMs: 600 });
      expect(waited).toBeGreaterThanOrEqual(600);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
