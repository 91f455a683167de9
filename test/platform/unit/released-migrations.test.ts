import { createHash } from 'node:crypto';
import { MIGRATIONS } from '../../../src/platform/eventstore/postgres-schema';

// A database migrated before holds the functions these texts created: a released migration's text must
// not change (its parts are built from shared fragments, so an edit to one would change it silently).
// A new rule is a new migration: append its digest here.
const RELEASED = [
  '01b25e05c4f03b5fff4e7d37ee7e5e792851c1cf7d4636e33036a687d4065b69',
  '9e2bd760eb2c0c9231d7dcc796a35ac0a8f36c4fe30534e9fa47fa0c4d304096',
  '2607a9176aa19b6f46941540bd14d0cf83c272672786d34dc8dfc343a48187d0',
  '2a0ffe66b737d9ba68e1e8c293839b96fe60da98f5f9aaf35cc97875a134e1db',
];

test('the released PostgreSQL migrations are byte for byte what was released', () => {
  const digests = MIGRATIONS.slice(0, RELEASED.length).map((sql) => createHash('sha256').update(sql).digest('hex'));
  expect(digests).toEqual(RELEASED);
});
