import { Client } from 'pg';
import { openEventStore } from '../../src/init';
import { fillPostgresRaw, fillTraffic } from './projector-traffic';
async function main() {
  const N = Number(process.env.N ?? 200000);
  const dir = '/tmp/projfast/data';
  const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS projfast_bench WITH (FORCE)');
  await admin.query('CREATE DATABASE projfast_bench');
  await admin.query('ALTER DATABASE projfast_bench SET synchronous_commit = off');
  await admin.end();
  const url = 'postgres://postgres@127.0.0.1:5432/projfast_bench';
  for (const kind of ['sqlite', 'postgres'] as const) {
    const store = openEventStore({ EVENT_STORE: kind, DATA_DIR: dir, DATABASE_URL: url });
    await store.ping();
    if (kind === 'postgres') { const c = new Client({ connectionString: url }); await c.connect(); await fillPostgresRaw(c, N); await c.end(); }
    else await fillTraffic(store, N, 64);
    await store.close();
    console.log(kind, 'filled');
  }
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
