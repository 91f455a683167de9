import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../config';
import { keyId } from './aead';

export const MASTER_KEY_FILE = 'master.key';

export interface MasterKey {
  id: string;
  key: Buffer;
}

export interface MasterKeys {
  /** Wraps every new data key. */
  current: MasterKey;
  /** Still unwraps data keys wrapped before a rotation (MASTER_KEY_PREVIOUS), until `tollgate keys rotate-master` re-wrapped them. */
  previous?: MasterKey;
  /** Where the current key came from: the setting, or the file generated under DATA_DIR. */
  source: 'MASTER_KEY' | 'file';
}

/** 32 bytes in base64 (standard or url-safe), or undefined. */
export function decodeMasterKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (!/^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(t)) return undefined;
  const b = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return b.length === 32 ? b : undefined;
}

export const newMasterKeyText = (): string => randomBytes(32).toString('base64');

/**
 * The master key: MASTER_KEY, else `${DATA_DIR}/master.key`, generated (0600) at the first start
 * with one line saying so. A file that does not hold a key stops the start with one line.
 */
export function resolveMasterKeys(
  c: { MASTER_KEY?: string; MASTER_KEY_PREVIOUS?: string; DATA_DIR: string },
  say: (line: string) => void,
): MasterKeys {
  const previous = c.MASTER_KEY_PREVIOUS ? fromText(c.MASTER_KEY_PREVIOUS, 'MASTER_KEY_PREVIOUS') : undefined;
  if (c.MASTER_KEY) return { current: fromText(c.MASTER_KEY, 'MASTER_KEY'), previous, source: 'MASTER_KEY' };
  const file = join(c.DATA_DIR, MASTER_KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(c.DATA_DIR, { recursive: true });
    // wx: two processes starting at once never overwrite each other's key.
    try {
      writeFileSync(file, newMasterKeyText() + '\n', { mode: 0o600, flag: 'wx' });
      say(`MASTER_KEY is not set: generated a master key in ${file} (back it up; set MASTER_KEY to share one key between hosts)`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  const key = decodeMasterKey(readFileSync(file, 'utf8'));
  if (!key) throw new ConfigError([`invalid setting MASTER_KEY: unset, and ${file} does not hold 32 bytes in base64`]);
  return { current: { id: keyId(key), key }, previous, source: 'file' };
}

function fromText(text: string, name: string): MasterKey {
  const key = decodeMasterKey(text);
  if (!key) throw new ConfigError([`invalid setting ${name}: must be 32 bytes in base64 (got "***")`]);
  return { id: keyId(key), key };
}
