import { Command } from 'commander';
import type { RecordedEvent } from '../platform/eventstore/port';
import { fail, withStore } from './context';

function line(e: RecordedEvent): string {
  return JSON.stringify({
    position: e.position.toString(),
    stream: e.stream,
    revision: e.revision.toString(),
    type: e.type,
    created: e.created,
    id: e.id,
    data: e.data,
    metadata: e.metadata,
  });
}

function parsePosition(v: string): bigint {
  if (!/^\d+$/.test(v)) fail(`--from must be a position (a whole number), got "${v}"`);
  return BigInt(v);
}

export function eventsCommand(): Command {
  const cmd = new Command('events').description('read the event store (one JSON object per line)');
  cmd
    .command('read <stream>')
    .description('every event of one stream, oldest first')
    .action((stream: string) =>
      withStore(async (store) => {
        const events = await store.readStream(stream);
        if (events.length === 0) process.stderr.write(`stream ${stream} is empty or does not exist\n`);
        for (const e of events) process.stdout.write(line(e) + '\n');
      }),
    );
  cmd
    .command('tail')
    .description('follow every new event in the store until interrupted')
    .option('--from <position>', 'start after this global position (default: the current head)')
    .action((o: { from?: string }) =>
      withStore(async (store) => {
        const after = o.from !== undefined ? parsePosition(o.from) : await store.headPosition();
        const sub = store.subscribeToAll({ after });
        process.once('SIGINT', () => void sub.close());
        process.once('SIGTERM', () => void sub.close());
        for await (const e of sub) process.stdout.write(line(e) + '\n');
      }),
    );
  return cmd;
}
