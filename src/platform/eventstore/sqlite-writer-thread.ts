import { parentPort, workerData } from 'node:worker_threads';
import { openWriter, WriteRequest, WriterMessage } from './sqlite-writer';

/**
 * The SQLite writer thread (started by SqliteEventStore). Requests that arrive while a COMMIT runs
 * wait in the port; the next turn writes all of them as one group.
 */
const { file, groupCommit } = workerData as { file: string; groupCommit: boolean };
const port = parentPort!;
const writer = openWriter(file, groupCommit);

let queue: WriteRequest[] = [];
let scheduled = false;

function flush(): void {
  scheduled = false;
  const batch = queue;
  queue = [];
  if (batch.length) port.postMessage(writer.write(batch));
}

port.on('message', (m: WriterMessage) => {
  if (m.type === 'close') {
    flush();
    writer.close();
    port.close();
    return;
  }
  for (const r of m.batch) queue.push(r);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
});
