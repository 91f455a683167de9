import { describeStartupError } from '../../../src/platform/startup-error';

/** The one line a failed start prints for an event store that cannot be reached. */

const config = {
  EVENT_STORE: 'esdb' as const,
  DATA_DIR: '/data',
  EVENTSTORE_CONNECTION_STRING: 'esdb://admin:secret@localhost:2113?tls=false',
  DATABASE_URL: undefined,
};
const unavailable = (message: string) => Object.assign(new Error(message), { name: 'StoreUnavailable' });

test("EVENT_STORE=esdb with nothing listening: the setting, without credentials, and gRPC's reason without an empty resolution note", () => {
  const line = describeStartupError(
    unavailable(
      '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:2113 (2026-11-28T15:00:00.000Z). Resolution note: ',
    ),
    config,
  );
  expect(line).toBe(
    'event store unavailable (EVENT_STORE=esdb, EVENTSTORE_CONNECTION_STRING=esdb://***@localhost:2113?tls=false): ' +
      '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:2113 (2026-11-28T15:00:00.000Z)',
  );
});

test('a resolution note that says something is kept', () => {
  const line = describeStartupError(
    unavailable('14 UNAVAILABLE: No connection established. Resolution note: DNS lookup of esdb.internal failed'),
    config,
  );
  expect(line).toMatch(/Resolution note: DNS lookup of esdb.internal failed$/);
});
