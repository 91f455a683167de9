/**
 * handleCommand's options for writers whose retries must be recognised as the same write (the
 * auto-reload worker): ids derived from the decision, metadata from the decision, an async decide
 * told the revision and head it decides at.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventRecord } from '../../../src/platform/event';
import { handleCommand } from '../../../src/platform/eventstore/command-handler';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';

let dir: string;
let store: SqliteEventStore;
const counter = { initial: () => 0, evolve: (n: number, _e: EventRecord) => n + 1 };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-command-handler-'));
  store = new SqliteEventStore({ file: join(dir, 'events.sqlite') });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

test('eventIds and a metadata function derive both from the decision; a re-sent decision is the same write', async () => {
  const run = () =>
    handleCommand(
      store,
      's-1',
      counter,
      async (n, at) => {
        await new Promise((r) => setTimeout(r, 5)); // decide may wait (the worker waits for the projections)
        return {
          events: [
            { type: 'Counted', data: { n } },
            { type: 'Noted', data: {} },
          ],
          result: { id: `r-${at.revision === null ? 'none' : at.revision}`, head: at.head },
        };
      },
      {
        eventIds: ({ result }) => [
          `00000000-0000-4000-8000-00000000000${result.id === 'r-none' ? 1 : 3}`,
          `00000000-0000-4000-8000-00000000000${result.id === 'r-none' ? 2 : 4}`,
        ],
        metadata: ({ result }) => ({ actor: 'test', correlationId: result.id }),
      },
    );
  const first = await run();
  expect(first.result).toEqual({ id: 'r-none', head: 0n });
  const events = await store.readStream('s-1');
  expect(events.map((e) => [e.id, e.type, e.metadata.correlationId])).toEqual([
    ['00000000-0000-4000-8000-000000000001', 'Counted', 'r-none'],
    ['00000000-0000-4000-8000-000000000002', 'Noted', 'r-none'],
  ]);
  // The same ids re-sent at the revision they were first written at: the original result, nothing written.
  const again = await store.append(
    's-1',
    events.slice(0, 2).map((e) => ({ id: e.id, type: e.type, data: e.data })),
    { expectedRevision: 'no_stream' },
  );
  expect(again.position).toBe(first.appended!.position);
  const second = await run();
  expect(second.result).toEqual({ id: 'r-1', head: events[1].position });
  expect((await store.readStream('s-1')).map((e) => e.id).slice(2)).toEqual([
    '00000000-0000-4000-8000-000000000003',
    '00000000-0000-4000-8000-000000000004',
  ]);
});

test('too few event ids is refused before anything is written', async () => {
  await expect(
    handleCommand(
      store,
      's-2',
      counter,
      () => ({
        events: [
          { type: 'A', data: {} },
          { type: 'B', data: {} },
        ],
        result: null,
      }),
      {
        eventIds: () => ['00000000-0000-4000-8000-000000000009'],
        metadata: {},
      },
    ),
  ).rejects.toThrow(TypeError);
  expect(await store.readStream('s-2')).toEqual([]);
});
