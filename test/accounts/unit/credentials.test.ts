import { dummyPasswordHash, hashPassword, verifyPassword } from '../../../src/accounts/sessions/passwords';
import { crc32 } from 'node:zlib';
import { displayPrefix, generateKeySecret, KEY_LENGTH, keyShape, lastFour } from '../../../src/accounts/key-secrets';

describe('passwords (scrypt)', () => {
  test('a hash verifies its own password and nothing else, and never contains it', async () => {
    const h = await hashPassword('correct horse battery');
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{88}$/);
    expect(h).not.toContain('correct horse battery');
    expect(await verifyPassword('correct horse battery', h)).toBe(true);
    expect(await verifyPassword('correct horse batterY', h)).toBe(false);
    expect(await verifyPassword('', h)).toBe(false);
  });

  test('the same password hashes differently each time (salted)', async () => {
    expect(await hashPassword('same password')).not.toBe(await hashPassword('same password'));
  });

  test('malformed stored hashes fail instead of throwing', async () => {
    for (const bad of [
      '',
      'plain',
      'scrypt$1$2$3$abc',
      'bcrypt$16384$8$1$c2FsdA==$aGFzaA==',
      'scrypt$x$8$1$c2FsdA==$aGFzaGhhc2hoYXNoaGFzaA==',
      'scrypt$16384$8$1$c2FsdA==$c2hvcnQ=',
    ]) {
      expect(await verifyPassword('whatever', bad)).toBe(false);
    }
  });

  test('the dummy hash (for unknown e-mails) is a real hash that no guess matches', async () => {
    const d = await dummyPasswordHash();
    expect(d).toMatch(/^scrypt\$/);
    expect(await verifyPassword('correct horse battery', d)).toBe(false);
  });
});

describe('API key secrets', () => {
  test('tgk + 49 base62 characters (purely alphanumeric), never repeated; prefix and last 4 for display', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const k = generateKeySecret();
      expect(k).toMatch(/^tgk[0-9A-Za-z]{49}$/);
      expect(keyShape(k)).toBe('key');
      seen.add(k);
    }
    expect(seen.size).toBe(500);
    expect(KEY_LENGTH).toBe(52);
    expect(displayPrefix('tgkabcdefghij')).toBe('tgkabcde');
    expect(lastFour('tgkabcdefghij')).toBe('ghij');
  });

  test('every base62 character occurs in the random part (the alphabet is used whole)', () => {
    const chars = new Set([...Array.from({ length: 200 }, () => generateKeySecret().slice(3, 46)).join('')]);
    expect(chars.size).toBe(62);
  });

  test('the checksum tells a mistyped key from a foreign one; keys of the old format are still keys', () => {
    const k = generateKeySecret();
    // Any one changed character in the random part or the checksum is caught.
    for (const i of [3, 20, 45, 46, 51]) {
      const swapped = k.slice(0, i) + (k[i] === 'a' ? 'b' : 'a') + k.slice(i + 1);
      expect(keyShape(swapped)).toBe('mistyped');
    }
    expect(keyShape(k.slice(0, -1))).toBe('mistyped'); // truncated
    expect(keyShape(`tg_${'A1b2'.repeat(12)}`)).toBe('key'); // issued before the new format
    expect(keyShape('tg_short')).toBe('mistyped');
    expect(keyShape('sk-proj-abcdef')).toBe('foreign');
    expect(keyShape('')).toBe('foreign');
    // The checksum is the standard CRC-32 (zlib's) of the random part, in base62: scanners can recompute it.
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    let n = crc32(k.slice(3, 46));
    let expected = '';
    for (let i = 0; i < 6; i++) {
      expected = alphabet[n % 62] + expected;
      n = Math.floor(n / 62);
    }
    expect(k.slice(46)).toBe(expected);
  });
});
