import { dataString, recordedFromJson, topLevelString, UNSURE } from '../../../src/platform/eventstore/decode';

// The workspace id read from an event's JSON text without parsing it (src/platform/eventstore/decode.ts).

const parsed = (json: string, key: string) => {
  const v = (JSON.parse(json) as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : undefined;
};

test('reads the same top-level string JSON.parse would, and nothing nested or inside a string', () => {
  const cases: unknown[] = [
    { workspaceId: 'ws-1' },
    { requestId: 'r', workspaceId: 'ws-2', keyId: 'k' },
    { nested: { workspaceId: 'inner' }, workspaceId: 'outer' },
    { list: [{ workspaceId: 'in-array' }, '"workspaceId":"x"', ['{', '}']], workspaceId: 'after-array' },
    { note: 'a "workspaceId": "fake" in a value', other: 'back\\slash\\', workspaceId: 'real' },
    { note: '"}]{[', workspaceId: 'after-brackets-in-strings' },
    { workspaceId: 'with "quotes" and \\ and \u00e9 and \n' },
    { workspaceId: 42 },
    { workspaceId: null },
    { workspaceId: { id: 'object' } },
    { nested: { workspaceId: 'only-nested' } },
    { workspaceIdX: 'longer key', xworkspaceId: 'other key' },
    {},
  ];
  for (const c of cases) {
    for (const json of [JSON.stringify(c), JSON.stringify(c, null, 2), ` ${JSON.stringify(c)}\n`]) {
      expect({ json, got: topLevelString(json, 'workspaceId') }).toEqual({ json, got: parsed(json, 'workspaceId') });
    }
  }
});

test('gives up (UNSURE) on what it would have to unescape or is not an object', () => {
  expect(topLevelString('{"workspace\\u0049d":"ws"}', 'workspaceId')).toBe(UNSURE);
  expect(topLevelString('["workspaceId"]', 'workspaceId')).toBe(UNSURE);
  expect(topLevelString('"workspaceId"', 'workspaceId')).toBe(UNSURE);
  expect(topLevelString('null', 'workspaceId')).toBe(UNSURE);
});

test("dataString leaves a lazily decoded event's data unparsed, and follows data once read or replaced", () => {
  const json = JSON.stringify({ requestId: 'r', workspaceId: 'ws-9', n: 1 });
  const lazy = () => recordedFromJson(1n, 'id', 's', 0n, 'Skipped', json, '{}', '', new Set(['Kept']));
  const e = lazy();
  expect(dataString(e, 'workspaceId')).toBe('ws-9');
  expect(dataString(e, 'requestId')).toBe('r');
  expect(dataString(e, 'n')).toBeUndefined();
  expect(Object.getOwnPropertyDescriptor(e, 'data')!.get).toBeDefined();
  e.data = { workspaceId: 'replaced' };
  expect(dataString(e, 'workspaceId')).toBe('replaced');
  const f = lazy();
  (f.data as { workspaceId: string }).workspaceId = 'changed';
  expect(dataString(f, 'workspaceId')).toBe('changed');
  // Parsed at once (a decoded type): read from data.
  expect(dataString(recordedFromJson(1n, 'id', 's', 0n, 'Kept', json, '{}', '', new Set(['Kept'])), 'workspaceId')).toBe('ws-9');
  // An escaped key: parsed, same answer.
  const escaped = recordedFromJson(1n, 'id', 's', 0n, 'Skipped', '{"workspace\\u0049d":"ws-e"}', '{}', '', new Set());
  expect(dataString(escaped, 'workspaceId')).toBe('ws-e');
});
