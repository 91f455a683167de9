import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { acceptanceDecider, AcceptanceState, decideAcceptPolicy } from '../../../src/accounts/policy/acceptance';
import { parseUsagePolicy, UsagePolicyFormatError } from '../../../src/accounts/policy/usage-policy';
import { scenario } from '../../support/gwt';

describe('parseUsagePolicy', () => {
  test('docs/USAGE-POLICY.md parses: a version, an effective date and six numbered rules with titles', () => {
    const p = parseUsagePolicy(readFileSync(resolve(__dirname, '../../../docs/USAGE-POLICY.md'), 'utf8'));
    expect(p.version).toMatch(/^\S+$/);
    expect(p.effectiveDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(p.rules).toHaveLength(6);
    for (const r of p.rules) {
      expect(r.title).not.toMatch(/\*\*/);
      expect(r.text.length).toBeGreaterThan(20);
      expect(r.text).not.toMatch(/\s{2}/);
    }
  });

  test('a rule continues on indented lines; the list ends at the next heading', () => {
    const p = parseUsagePolicy(
      'Version: 7\nEffective: 2030-02-03\n\n## Rules\n\n1. **One.** first\n   line two\n2. **Two.** second\n\n## After\n\n3. **Not a rule.** x\n',
    );
    expect(p).toEqual({
      version: '7',
      effectiveDate: '2030-02-03',
      rules: [
        { number: 1, title: 'One.', text: 'first line two' },
        { number: 2, title: 'Two.', text: 'second' },
      ],
    });
  });

  test.each([
    ['no version', 'Effective: 2030-01-01\n## Rules\n1. **A.** b', /Version/],
    ['a version with spaces', 'Version: one two\nEffective: 2030-01-01\n## Rules\n1. **A.** b', /Version/],
    ['no effective date', 'Version: 1\n## Rules\n1. **A.** b', /Effective/],
    ['no rules section', 'Version: 1\nEffective: 2030-01-01\n1. **A.** b', /## Rules/],
    ['an empty rules section', 'Version: 1\nEffective: 2030-01-01\n## Rules\n\n## Next\n1. **A.** b', /no numbered rules/],
  ])('%s is refused', (_what, text, why) => {
    expect(() => parseUsagePolicy(text)).toThrow(UsagePolicyFormatError);
    expect(() => parseUsagePolicy(text)).toThrow(why);
  });
});

describe('accepting the usage policy', () => {
  const accept = scenario<AcceptanceState, { userId: string; version: string; currentVersion: string }>(
    acceptanceDecider,
    decideAcceptPolicy,
  );
  const registered = { type: 'UserRegistered', data: { userId: 'u1', email: 'u@example.com', name: 'U', passwordHash: 'x' } };
  const accepted = (version: string) => ({ type: 'UsagePolicyAccepted', data: { userId: 'u1', version } });

  test('a user who never accepted (an account from before) accepts the current version', () =>
    accept.given(registered).when({ userId: 'u1', version: '2', currentVersion: '2' }).then(accepted('2')));
  test('a user who accepted an older version accepts the new one', () =>
    accept.given(registered, accepted('1')).when({ userId: 'u1', version: '2', currentVersion: '2' }).then(accepted('2')));
  test('accepting the current version again appends nothing', () =>
    accept.given(registered, accepted('2')).when({ userId: 'u1', version: '2', currentVersion: '2' }).thenNothing());
  test('another version than the current one is refused, naming the current one', () =>
    accept
      .given(registered)
      .when({ userId: 'u1', version: '1', currentVersion: '2' })
      .thenFails('unprocessable', /current usage policy version, 2/));
  test('an unknown user is refused', () =>
    accept.given().when({ userId: 'u1', version: '2', currentVersion: '2' }).thenFails('not_found', 'User not found'));
});
