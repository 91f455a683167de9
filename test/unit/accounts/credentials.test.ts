import { dummyPasswordHash, hashPassword, verifyPassword } from '../../../src/api/accounts/passwords';
import { displayPrefix, generateKeySecret, lastFour } from '../../../src/api/accounts/keys';
import { readCookie } from '../../../src/api/accounts/sessions';

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
    for (const bad of ['', 'plain', 'scrypt$1$2$3$abc', 'bcrypt$16384$8$1$c2FsdA==$aGFzaA==', 'scrypt$x$8$1$c2FsdA==$aGFzaGhhc2hoYXNoaGFzaA==', 'scrypt$16384$8$1$c2FsdA==$c2hvcnQ=']) {
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
  test('tg_ + 48 base62 characters, never repeated; prefix and last 4 for display', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const k = generateKeySecret();
      expect(k).toMatch(/^tg_[0-9A-Za-z]{48}$/);
      seen.add(k);
    }
    expect(seen.size).toBe(500);
    expect(displayPrefix('tg_abcdefghij')).toBe('tg_abcde');
    expect(lastFour('tg_abcdefghij')).toBe('ghij');
  });

  test('every base62 character occurs (the alphabet is used whole)', () => {
    const chars = new Set([...Array.from({ length: 200 }, () => generateKeySecret().slice(3)).join('')]);
    expect(chars.size).toBe(62);
  });
});

describe('cookies', () => {
  test('reads one cookie among many, decoded; absent or broken → null', () => {
    expect(readCookie('a=1; tg_session=abc%2Ddef; b=2', 'tg_session')).toBe('abc-def');
    expect(readCookie('tg_session="quoted"', 'tg_session')).toBe('quoted');
    expect(readCookie('x_tg_session=no', 'tg_session')).toBeNull();
    expect(readCookie(undefined, 'tg_session')).toBeNull();
    expect(readCookie('tg_session=%E0%A4%A', 'tg_session')).toBeNull();
  });
});
