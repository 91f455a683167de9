import { Client } from 'pg';

const count = (hay: Buffer, needle: string) => {
  let n = 0;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + 1)) n++;
  return n;
};

/**
 * Every row of every table, and the raw pages (pageinspect) of the events table, its indexes and its
 * TOAST table: an UPDATE leaves the old row version in the pages, where SQL no longer sees it.
 */
export async function countInPostgres(url: string, needles: string[]): Promise<number[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
    const tables = (await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.t);
    if (!tables.includes('tollgate_events')) throw new Error('no tollgate_events table');
    const rels = (
      await c.query<{ r: string }>(
        `SELECT 'tollgate_events' AS r
           UNION ALL SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'tollgate_events'::regclass
           UNION ALL SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'tollgate_events'::regclass AND reltoastrelid <> 0`,
      )
    ).rows.map((x) => x.r);
    const pages: Buffer[] = [];
    for (const rel of rels) {
      const r = await c.query<{ p: Buffer }>(
        `SELECT get_raw_page($1::text, b::int) AS p FROM generate_series(0, pg_relation_size($1::regclass) / current_setting('block_size')::int - 1) b`,
        [rel],
      );
      pages.push(...r.rows.map((x) => x.p));
    }
    const raw = Buffer.concat(pages);
    if (raw.length === 0) throw new Error('no pages read');
    const out: number[] = [];
    for (const needle of needles) {
      let n = count(raw, needle);
      for (const t of tables)
        n += Number((await c.query(`SELECT count(*) AS n FROM ${t} x WHERE x::text LIKE '%' || $1 || '%'`, [needle])).rows[0].n);
      out.push(n);
    }
    return out;
  } finally {
    await c.end();
  }
}
