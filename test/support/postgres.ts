import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * The PostgreSQL the tests use, when there is one: TEST_DATABASE_URL names a server and a database
 * to connect to for administration (.ci/run sets postgres://postgres@127.0.0.1:5432/postgres). Each
 * test run creates a database of its own there and drops it afterwards.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** `admin` with its database replaced by `name`. */
export function withDatabase(admin: string, name: string): string {
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}

async function adminQuery(sql: string, admin = TEST_DATABASE_URL): Promise<void> {
  if (!admin) throw new Error('TEST_DATABASE_URL is not set');
  const c = new Client({ connectionString: admin, connectionTimeoutMillis: 5_000 });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/**
 * A new, empty database `tollgate_test_<label>_<hex>`; drop() removes it (closing what still uses it).
 * `asyncCommit`: commits do not wait for the WAL flush (synchronous_commit=off for this database).
 * Visibility and ordering are unchanged, only durability across a server crash is given up; the
 * contract's heavy concurrency cases use it so they measure the adapter, not this machine's fsync.
 * `adminUrl`: another admin connection than TEST_DATABASE_URL (the benches have defaults of their own).
 */
export async function createTestDatabase(label = 'run', opts: { asyncCommit?: boolean; adminUrl?: string } = {}): Promise<TestDatabase> {
  const admin = opts.adminUrl ?? TEST_DATABASE_URL;
  const name = `tollgate_test_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(5).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`, admin);
  if (opts.asyncCommit) await adminQuery(`ALTER DATABASE ${name} SET synchronous_commit = off`, admin);
  return {
    name,
    url: withDatabase(admin!, name),
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, admin),
  };
}

/**
 * One database for a whole test file, emptied before each test: `fresh()` ends every other
 * connection to it and recreates its `public` schema (where the event store keeps its tables,
 * sequence and functions), which leaves it as a new database would be. A CREATE DATABASE and a DROP
 * per test cost 1-2 s each on this 2-core machine under load; this costs a few milliseconds.
 * `drop()` (in afterAll) removes the database.
 */
export function perFileTestDatabase(
  label = 'run',
  opts: { asyncCommit?: boolean } = {},
): { fresh(): Promise<string>; drop(): Promise<void> } {
  let db: Promise<TestDatabase> | null = null;
  return {
    async fresh() {
      db ??= createTestDatabase(label, opts);
      const { url } = await db;
      const c = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
      await c.connect();
      try {
        await c.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        );
        await c.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
      } finally {
        await c.end();
      }
      return url;
    },
    async drop() {
      if (db) await (await db).drop();
    },
  };
}
