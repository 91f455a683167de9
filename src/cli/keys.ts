/* eslint-disable @typescript-eslint/no-require-imports */
import { Command } from 'commander';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail } from './context';

/**
 * `tollgate keys rotate-master`: re-wraps every data key with the current master key.
 * - MASTER_KEY set: first set MASTER_KEY to the new key and MASTER_KEY_PREVIOUS to the old one on
 *   every process, then run this; afterwards MASTER_KEY_PREVIOUS can go.
 * - the generated `${DATA_DIR}/master.key`: this makes a new key, re-wraps, then replaces the file
 *   (restart the service afterwards).
 * The events never change: only the wraps of the data keys do (docs/SECURITY.md).
 */
export function keysCommand(): Command {
  const cmd = new Command('keys').description('the data keys that seal personal fields and secrets (docs/SECURITY.md)');
  cmd
    .command('rotate-master')
    .description('re-wrap every data key with the current master key (or, for the generated key file, with a new one)')
    .action(async () => {
      const { loadConfig } = require('../platform/config') as typeof import('../platform/config');
      const { describeStartupError } = require('../platform/startup-error') as typeof import('../platform/startup-error');
      const mk = require('../platform/crypto/master-key') as typeof import('../platform/crypto/master-key');
      const { keyId } = require('../platform/crypto/aead') as typeof import('../platform/crypto/aead');
      const { openKeyStore } = require('../init') as typeof import('../init');
      let c;
      let master;
      try {
        c = loadConfig();
        master = mk.resolveMasterKeys(c, (line) => process.stderr.write(line + '\n'));
      } catch (err) {
        fail(describeStartupError(err, c));
      }
      let newFileText: string | undefined;
      if (master.source === 'file' && !master.previous) {
        newFileText = mk.newMasterKeyText();
        const key = mk.decodeMasterKey(newFileText)!;
        master = { current: { id: keyId(key), key }, previous: master.current, source: 'file' as const };
      }
      const store = openKeyStore(c, master);
      try {
        const n = await store.rewrapAll();
        if (newFileText) {
          const file = join(c.DATA_DIR, mk.MASTER_KEY_FILE);
          writeFileSync(`${file}.new`, newFileText + '\n', { mode: 0o600 });
          renameSync(`${file}.new`, file);
        }
        process.stdout.write(
          `re-wrapped ${n} data keys with master key ${master.current.id}${newFileText ? ` (new key in ${c.DATA_DIR}/${mk.MASTER_KEY_FILE}: restart the service)` : ''}\n`,
        );
      } finally {
        await store.close();
      }
    });
  return cmd;
}
