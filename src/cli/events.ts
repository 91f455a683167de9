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
  cmd
    .command('seal-plaintext')
    .description(
      'seal, in place, the personal fields and secrets a release before encryption wrote in plain text, then compact the store (stop the service first; docs/SECURITY.md)',
    )
    .option('--batch <n>', 'events per transaction', '500')
    .action((o: { batch: string }) => sealPlaintextCommand(Number(o.batch)));
  return cmd;
}

/** `tollgate events seal-plaintext`: progress on stderr, the outcome on stdout. */
async function sealPlaintextCommand(batchSize: number): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports -- lazy: `tollgate --help` loads no service */
  const { loadConfig } = require('../platform/config') as typeof import('../platform/config');
  const { describeStartupError } = require('../platform/startup-error') as typeof import('../platform/startup-error');
  const init = require('../init') as typeof import('../init');
  const { lookupHasher } = require('../platform/crypto/lookup-key') as typeof import('../platform/crypto/lookup-key');
  const { sealPlaintext } = require('../platform/crypto/seal-plaintext') as typeof import('../platform/crypto/seal-plaintext');
  /* eslint-enable @typescript-eslint/no-require-imports */
  if (!Number.isInteger(batchSize) || batchSize < 1) fail('--batch must be a whole number of at least 1');
  let c;
  let opened;
  let rows;
  let lookupHash;
  try {
    c = loadConfig();
    rows = init.openPlaintextRows(c);
    opened = init.openProtectedStore(c, (line) => process.stderr.write(line + '\n'));
    await opened.store.ping();
    await opened.store.keys.checkMasterKey();
    lookupHash = await lookupHasher(opened.store.keys, opened.master);
  } catch (err) {
    await opened?.store.close().catch(() => undefined);
    await rows?.close().catch(() => undefined);
    fail(describeStartupError(err, c));
  }
  let last = 0;
  try {
    const done = await sealPlaintext({
      rows,
      sealer: opened.store,
      lookupHash,
      batchSize,
      progress(p) {
        if (Date.now() - last < 1000 && p.sealed < p.total) return;
        last = Date.now();
        process.stderr.write(`sealed ${p.sealed} of ${p.total} plain-text events (${p.renamed} claim streams renamed)\n`);
      },
    });
    await opened.store.close();
    process.stderr.write(`compacting ${rows.where} …\n`);
    await rows.compact();
    process.stdout.write(`sealed ${done.sealed} plain-text events, renamed ${done.renamed} claim streams; ${rows.where} compacted\n`);
  } finally {
    await opened.store.close().catch(() => undefined);
    await rows.close();
  }
}
