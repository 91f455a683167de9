/**
 * The PostgreSQL event store's schema, as numbered migrations. Each process applies the missing ones
 * at start, inside one transaction under an advisory lock, so processes starting together do not race.
 *
 * Commit order (schema version 3, no append lock): a reader must never move its bigint cursor past a
 * position that a transaction still in flight may yet commit. So a position is a function of the
 * writing transaction's id: base + (xid8 << 16) + index within the transaction. Every transaction with
 * an xid below the oldest one still running (`pg_snapshot_xmin` of the reader's own snapshot; the
 * oldest in this database, see tollgate_safe_position) has ended, so positions below base + (xmin << 16)
 * are final: readers read only below that safe point (tollgate_safe_position). Versions 1 and 2 serialized every append under one advisory lock held
 * through COMMIT instead. docs/ARCHITECTURE.md ("Commit order (PostgreSQL)") has the proof.
 */

/** Bits of a position that number the events within one transaction (at most 65,536 per transaction). */
export const TX_INDEX_BITS = 16;
/** Most events one append transaction (one group-commit batch) may write. */
export const MAX_EVENTS_PER_TX = 2 ** TX_INDEX_BITS;

/**
 * Key of the advisory lock appends took before schema version 3 (an arbitrary constant: "tollgate" in
 * ASCII, truncated). Since version 3 only a bench's comparison (test/bench/postgres-older-appends.ts) takes it.
 */
export const APPEND_LOCK_KEY = '7407353474';
/** Key of the lock held while migrating. */
export const MIGRATE_LOCK_KEY = '7407353475';
/** NOTIFY channel: the payload is the last position an append wrote. */
export const NOTIFY_CHANNEL = 'tollgate_events';

/** The events table; the bench's raw inserts use it too, so both write the same indexes. */
export const EVENTS_TABLE = `
CREATE TABLE IF NOT EXISTS tollgate_events (
  position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id        text        NOT NULL,
  stream_id       text        NOT NULL,
  stream_revision bigint      NOT NULL,
  type            text        NOT NULL,
  data            json        NOT NULL,
  metadata        json        NOT NULL,
  created         timestamptz NOT NULL,
  CONSTRAINT tollgate_events_stream_revision UNIQUE (stream_id, stream_revision),
  CONSTRAINT tollgate_events_event_id UNIQUE (event_id)
);`;

/*
 * The append rules tollgate_append (migration 1) and tollgate_append_decide (migration 2) share, as
 * SQL text built once. Both migrations are released: the text these produce must stay byte for byte
 * what it was (a database migrated before would otherwise hold other functions than a new one), so a
 * change of rules is a new function in a new migration, not an edit here.
 */

/** The DECLARE lines of the decision's variables. */
const DECIDE_VARIABLES = `\
  v_last bigint;
  v_ok boolean;
  v_n int := coalesce(array_length(p_ids, 1), 0);
  v_first record;
  v_row record;
  v_match boolean;
`;

/** v_ok := whether the stream's last revision (v_last) satisfies p_expected. */
const EXPECTED_REVISION_CHECK = `\
  v_ok := CASE p_expected
    WHEN 'any' THEN true
    WHEN 'no_stream' THEN v_last IS NULL
    WHEN 'stream_exists' THEN v_last IS NOT NULL
    ELSE coalesce(v_last = p_expected::bigint, false) END;
`;

/**
 * The idempotent re-send: when the first id is stored already, the append is decided by whether all
 * the ids stand where this append would have put them (the original result) or not (a conflict).
 * `extraColumns` completes the RETURN QUERY rows for a function that returns more columns.
 */
function idempotentResend(extraColumns: string): string {
  return `\
  IF v_n > 0 AND (NOT v_ok OR p_expected IN ('any', 'stream_exists')) THEN
    SELECT e.stream_id, e.stream_revision, e.position INTO v_first FROM tollgate_events e WHERE e.event_id = p_ids[1];
    IF FOUND THEN
      v_match := v_first.stream_id = p_stream AND CASE
        WHEN p_expected = 'no_stream' THEN v_first.stream_revision = 0
        WHEN p_expected IN ('any', 'stream_exists') THEN true
        ELSE v_first.stream_revision = p_expected::bigint + 1 END;
      v_row := v_first;
      FOR i IN 2..v_n LOOP
        EXIT WHEN NOT v_match;
        SELECT e.stream_id, e.stream_revision, e.position INTO v_row FROM tollgate_events e WHERE e.event_id = p_ids[i];
        v_match := FOUND AND v_row.stream_id = p_stream AND v_row.stream_revision = v_first.stream_revision + i - 1;
      END LOOP;
      IF v_match THEN
        RETURN QUERY SELECT true, v_row.stream_revision, v_row.position${extraColumns};
      ELSE
        RETURN QUERY SELECT false, v_last, NULL::bigint${extraColumns};
      END IF;
      RETURN;
    END IF;
  END IF;
`;
}

/**
 * One round trip per append. Mirrors the SQLite adapter's rules: exact expected revisions; the same
 * ids re-sent where the expected revision says they went are an idempotent no-op (the original
 * result); any other reuse of an id is a conflict; `any`/`stream_exists` look the ids up first.
 * Returns (ok, revision, position): ok=false is a conflict with revision = the stream's current
 * revision (NULL: no stream).
 */
const APPEND_FUNCTION = `
CREATE OR REPLACE FUNCTION tollgate_append(
  p_stream text, p_expected text, p_ids text[], p_types text[], p_data text[], p_meta text[], p_created timestamptz
) RETURNS TABLE (ok boolean, revision bigint, pos bigint)
LANGUAGE plpgsql AS $$
DECLARE
${DECIDE_VARIABLES}  v_pos bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(${APPEND_LOCK_KEY});
  SELECT max(e.stream_revision) INTO v_last FROM tollgate_events e WHERE e.stream_id = p_stream;
  -- CASE, not OR: it guarantees the cast never sees 'any'.
${EXPECTED_REVISION_CHECK}
${idempotentResend('')}  IF NOT v_ok THEN
    RETURN QUERY SELECT false, v_last, NULL::bigint;
    RETURN;
  END IF;
  IF v_n = 0 THEN
    RETURN QUERY SELECT true, coalesce(v_last, -1), (SELECT coalesce(max(e.position), 0) FROM tollgate_events e);
    RETURN;
  END IF;
  -- An id stored anywhere already: a conflict, nothing written (the lock keeps this check exact).
  IF EXISTS (SELECT 1 FROM tollgate_events e WHERE e.event_id = ANY (p_ids)) THEN
    RETURN QUERY SELECT false, v_last, NULL::bigint;
    RETURN;
  END IF;
  WITH ins AS (
    INSERT INTO tollgate_events (event_id, stream_id, stream_revision, type, data, metadata, created)
    SELECT u.id, p_stream, coalesce(v_last, -1) + u.ord, u.type, u.data::json, u.meta::json, p_created
    FROM unnest(p_ids, p_types, p_data, p_meta) WITH ORDINALITY AS u(id, type, data, meta, ord)
    ORDER BY u.ord
    RETURNING position
  ) SELECT max(ins.position) INTO v_pos FROM ins;
  PERFORM pg_notify('${NOTIFY_CHANNEL}', v_pos::text);
  RETURN QUERY SELECT true, coalesce(v_last, -1) + v_n, v_pos;
END
$$;`;

/**
 * Group commit: several appends (the ones a process queued in one event-loop turn) in one
 * transaction and one WAL flush, in order. A conflict is a result row, not an error, so each append
 * still succeeds or fails on its own. Append i's events are p_ids[p_offsets[i] + 1 .. p_offsets[i] + p_counts[i]].
 */
const APPEND_BATCH_FUNCTION = `
CREATE OR REPLACE FUNCTION tollgate_append_batch(
  p_streams text[], p_expected text[], p_offsets int[], p_counts int[],
  p_ids text[], p_types text[], p_data text[], p_meta text[], p_created timestamptz
) RETURNS TABLE (ord int, ok boolean, revision bigint, pos bigint)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR i IN 1..coalesce(array_length(p_streams, 1), 0) LOOP
    SELECT * INTO r FROM tollgate_append(
      p_streams[i], p_expected[i],
      coalesce(p_ids[p_offsets[i] + 1 : p_offsets[i] + p_counts[i]], '{}'),
      coalesce(p_types[p_offsets[i] + 1 : p_offsets[i] + p_counts[i]], '{}'),
      coalesce(p_data[p_offsets[i] + 1 : p_offsets[i] + p_counts[i]], '{}'),
      coalesce(p_meta[p_offsets[i] + 1 : p_offsets[i] + p_counts[i]], '{}'),
      p_created);
    RETURN QUERY SELECT i, r.ok, r.revision, r.pos;
  END LOOP;
END
$$;`;

/**
 * tollgate_append's rules without its lock and without writing: decides one append from what is
 * committed now. Returns (ok, revision, pos, base): base not NULL means "write, revisions base+1..";
 * otherwise the append is already decided (a conflict, an idempotent re-send, or empty).
 */
const APPEND_DECIDE_FUNCTION = `
CREATE OR REPLACE FUNCTION tollgate_append_decide(p_stream text, p_expected text, p_ids text[])
RETURNS TABLE (ok boolean, revision bigint, pos bigint, base bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
${DECIDE_VARIABLES}BEGIN
  SELECT max(e.stream_revision) INTO v_last FROM tollgate_events e WHERE e.stream_id = p_stream;
${EXPECTED_REVISION_CHECK}${idempotentResend(', NULL::bigint')}  IF NOT v_ok THEN
    RETURN QUERY SELECT false, v_last, NULL::bigint, NULL::bigint;
  ELSIF v_n = 0 THEN
    RETURN QUERY SELECT true, coalesce(v_last, -1), (SELECT coalesce(max(e.position), 0) FROM tollgate_events e), NULL::bigint;
  ELSIF EXISTS (SELECT 1 FROM tollgate_events e WHERE e.event_id = ANY (p_ids)) THEN
    RETURN QUERY SELECT false, v_last, NULL::bigint, NULL::bigint;
  ELSE
    RETURN QUERY SELECT true, coalesce(v_last, -1) + v_n, NULL::bigint, coalesce(v_last, -1);
  END IF;
END
$$;`;

/**
 * Group commit with the lock around one statement. Every append of the batch is decided first,
 * without the lock (tollgate_append_decide: index lookups, the slow part); then the lock is taken and
 * all the events that will be written go in with ONE set-based INSERT, and the lock is held only from
 * there through COMMIT. The lock still orders every position allocation and every commit (positions
 * are taken only under it), so readers still see a prefix of the final order.
 * What the lock no longer covers (the decision) is made exact by the unique constraints: a writer that
 * raced this one to the same revision or event id makes the INSERT fail with 23505 (unique_violation),
 * the whole batch rolls back, and the client re-sends it through tollgate_append_batch, which decides
 * under the lock. The client sends each stream at most once per batch (two appends to one stream in one
 * batch would both be decided against the same revision).
 */
/** A grouped append's per-append results, shared by versions 2 and 3 of tollgate_append_grouped. */
const GROUPED_DECISION_VARIABLES = `\
  v_n int := coalesce(array_length(p_streams, 1), 0);
  v_ok boolean[] := array_fill(false, ARRAY[v_n]);
  v_rev bigint[] := array_fill(NULL::bigint, ARRAY[v_n]);
  v_pos bigint[] := array_fill(NULL::bigint, ARRAY[v_n]);
  v_base bigint[] := array_fill(NULL::bigint, ARRAY[v_n]);
  v_write boolean := false;
`;

/** Decides every append of a group from what is committed (tollgate_append_decide), before anything is written. */
const DECIDE_EACH_APPEND = `\
  FOR i IN 1..v_n LOOP
    SELECT * INTO r FROM tollgate_append_decide(p_streams[i], p_expected[i],
      coalesce(p_ids[p_offsets[i] + 1 : p_offsets[i] + p_counts[i]], '{}'));
    v_ok[i] := r.ok; v_rev[i] := r.revision; v_pos[i] := r.pos; v_base[i] := r.base;
    v_write := v_write OR r.base IS NOT NULL;
  END LOOP;
`;

const APPEND_GROUPED_FUNCTION = `
CREATE OR REPLACE FUNCTION tollgate_append_grouped(
  p_streams text[], p_expected text[], p_offsets int[], p_counts int[],
  p_ids text[], p_types text[], p_data text[], p_meta text[], p_created timestamptz
) RETURNS TABLE (ord int, ok boolean, revision bigint, pos bigint)
LANGUAGE plpgsql AS $$
DECLARE
${GROUPED_DECISION_VARIABLES}  v_max bigint;
  v_is int[];
  v_lasts bigint[];
  r record;
BEGIN
${DECIDE_EACH_APPEND}  IF v_write THEN
    PERFORM pg_advisory_xact_lock(${APPEND_LOCK_KEY});
    WITH ins AS (
      INSERT INTO tollgate_events (event_id, stream_id, stream_revision, type, data, metadata, created)
      SELECT p_ids[k], p_streams[b.i], v_base[b.i] + (k - b.off), p_types[k], p_data[k]::json, p_meta[k]::json, p_created
      FROM unnest(p_offsets, p_counts) WITH ORDINALITY AS b(off, cnt, i)
      CROSS JOIN LATERAL generate_series(b.off + 1, b.off + b.cnt) AS k
      WHERE v_base[b.i] IS NOT NULL
      ORDER BY k
      RETURNING stream_id, position
    ) SELECT array_agg(x.i), array_agg(x.last), max(x.last) INTO v_is, v_lasts, v_max
      FROM (SELECT array_position(p_streams, ins.stream_id) AS i, max(ins.position) AS last FROM ins GROUP BY ins.stream_id) x;
    FOR j IN 1..coalesce(array_length(v_is, 1), 0) LOOP
      v_pos[v_is[j]] := v_lasts[j];
    END LOOP;
    PERFORM pg_notify('${NOTIFY_CHANNEL}', v_max::text);
  END IF;
  RETURN QUERY SELECT i, v_ok[i], v_rev[i], v_pos[i] FROM generate_series(1, v_n) AS i;
END
$$;`;

/**
 * Version 3: positions from transaction ids, no append lock. The identity goes (positions are written
 * by the append); tollgate_positions holds the offset that puts every new position above every old
 * one: base = (highest old position + 1) - (migrating xid << 16), and floor = that highest old
 * position. An append transaction gets its xid at its INSERT, which waits for this migration's
 * ACCESS EXCLUSIVE lock, so its xid is above the migration's and its positions above floor (the
 * append checks it: min_xid). The safe point never drops below floor + 1: the old rows were all
 * committed before this migration could take its lock.
 */
const POSITIONS_FROM_XIDS = `
ALTER TABLE tollgate_events ALTER COLUMN position DROP IDENTITY;
CREATE TABLE tollgate_positions (base bigint NOT NULL, floor bigint NOT NULL, min_xid xid8 NOT NULL);
INSERT INTO tollgate_positions (base, floor, min_xid)
  SELECT m.floor + 1 - (pg_current_xact_id()::text::bigint << ${TX_INDEX_BITS}), m.floor, pg_current_xact_id()
  FROM (SELECT coalesce(max(position), 0) AS floor FROM tollgate_events) m;

/*
 * The exclusive upper bound of what a reader may read, from the calling statement's own snapshot
 * (STABLE: the same snapshot the statement's scan uses): base + (x << 16), x = the oldest xid still
 * running in that snapshot, leaving out the xids pg_stat_activity shows belong to a session of
 * ANOTHER database (a session never writes another database's tables; an xid it cannot place, e.g. a
 * prepared transaction's, counts), or the snapshot's xmax when none is left. Every transaction that
 * may still commit an event here has an xid >= x: it is running here, or unplaced, or gets its xid
 * later (>= xmax). So every position it writes is >= the bound, and nothing below it can still appear.
 */
CREATE FUNCTION tollgate_safe_position() RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT greatest(p.floor + 1, p.base + (coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
      WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
        WHERE a.backend_xid = x::xid AND a.datid IS NOT NULL AND a.datname <> current_database())),
    pg_snapshot_xmax(pg_current_snapshot()))::text::bigint << ${TX_INDEX_BITS}))
  FROM tollgate_positions p
$$;

DROP FUNCTION tollgate_append(text, text, text[], text[], text[], text[], timestamptz);
DROP FUNCTION tollgate_append_grouped(text[], text[], int[], int[], text[], text[], text[], text[], timestamptz);

/*
 * Group commit without the lock. Every append of the batch is decided from what is committed
 * (tollgate_append_decide), then all the events that will be written go in with ONE INSERT, whose
 * positions are base + (this transaction's xid << 16) + the event's index in the batch. The xid is
 * assigned by that INSERT, after every decision: an append decided on top of another transaction's
 * committed event therefore gets a larger xid, so positions follow each stream's revisions.
 * A race the decisions could not see (another transaction took one of these revisions or ids since)
 * makes the INSERT fail with 23505 (unique_violation): the whole batch rolls back and the client
 * sends it again as a new transaction (a retry inside this one would keep its older xid and could
 * place a stream's next revision before the one it raced with). The client sends each stream and each
 * event id at most once per batch, and at most 65,536 events. p_lock: take the pre-version-3 append
 * lock around the INSERT (only the bench, to compare with the old design in one run).
 */
CREATE FUNCTION tollgate_append_grouped(
  p_streams text[], p_expected text[], p_offsets int[], p_counts int[],
  p_ids text[], p_types text[], p_data text[], p_meta text[], p_created timestamptz, p_lock boolean DEFAULT false
) RETURNS TABLE (ord int, ok boolean, revision bigint, pos bigint)
LANGUAGE plpgsql AS $$
DECLARE
${GROUPED_DECISION_VARIABLES}  v_first bigint;
  v_xid xid8;
  v_p tollgate_positions;
  v_max bigint;
  r record;
BEGIN
  IF coalesce(array_length(p_ids, 1), 0) > ${MAX_EVENTS_PER_TX} THEN
    RAISE EXCEPTION 'an append transaction holds at most ${MAX_EVENTS_PER_TX} events' USING ERRCODE = '22003';
  END IF;
${DECIDE_EACH_APPEND}  IF v_write THEN
    IF p_lock THEN PERFORM pg_advisory_xact_lock(${APPEND_LOCK_KEY}); END IF;
    -- The xid is assigned here, after every decision above.
    v_xid := pg_current_xact_id();
    SELECT * INTO v_p FROM tollgate_positions;
    IF v_xid <= v_p.min_xid THEN
      RAISE EXCEPTION 'append transaction % is older than the schema migration %', v_xid, v_p.min_xid;
    END IF;
    v_first := v_p.base + (v_xid::text::bigint << ${TX_INDEX_BITS});
    INSERT INTO tollgate_events (position, event_id, stream_id, stream_revision, type, data, metadata, created)
    SELECT v_first + k - 1, p_ids[k], p_streams[b.i], v_base[b.i] + (k - b.off), p_types[k], p_data[k]::json, p_meta[k]::json, p_created
    FROM unnest(p_offsets, p_counts) WITH ORDINALITY AS b(off, cnt, i)
    CROSS JOIN LATERAL generate_series(b.off + 1, b.off + b.cnt) AS k
    WHERE v_base[b.i] IS NOT NULL;
    -- Positions are computed, not returned: each written append's last event is at offset + count.
    FOR i IN 1..v_n LOOP
      IF v_base[i] IS NOT NULL THEN
        v_pos[i] := v_first + p_offsets[i] + p_counts[i] - 1;
        v_max := greatest(v_max, v_pos[i]);
      END IF;
    END LOOP;
    PERFORM pg_notify('${NOTIFY_CHANNEL}', v_max::text);
  END IF;
  RETURN QUERY SELECT i, v_ok[i], v_rev[i], v_pos[i] FROM generate_series(1, v_n) AS i;
END
$$;

/* Processes still running version 2's code fall back to this name: the same lock-free path. */
CREATE OR REPLACE FUNCTION tollgate_append_batch(
  p_streams text[], p_expected text[], p_offsets int[], p_counts int[],
  p_ids text[], p_types text[], p_data text[], p_meta text[], p_created timestamptz
) RETURNS TABLE (ord int, ok boolean, revision bigint, pos bigint)
LANGUAGE sql AS $$
  SELECT * FROM tollgate_append_grouped(p_streams, p_expected, p_offsets, p_counts, p_ids, p_types, p_data, p_meta, p_created)
$$;
`;

/**
 * Version 4: the same append as version 3's tollgate_append_grouped (no lock, positions from the xid,
 * one INSERT after every decision), cheaper per append:
 * - the decisions are made together: one statement reads every stream's last revision and checks
 *   every expected revision, one index scan finds which of the ids are stored already. An append whose
 *   expected revision holds and none of whose ids is stored is written (revisions last+1..); every
 *   other one (a conflict, an idempotent re-send, an empty append) is decided by
 *   tollgate_append_decide as before, so the rules stay one text. (Version 3 made a function call of
 *   four statements per append: about 15 µs more server CPU per append.)
 * - data and metadata come as one JSON array each (p_data[k] is event k's JSON, its text kept as sent),
 *   not as text[]: the client joins the JSON texts instead of escaping each into an array literal.
 * - plans are generic (planned once per connection): a batch of one append was planned again on every
 *   call (custom plans won on cost), about half of its server CPU (770 -> 370 µs per call, measured).
 * Version 3's function stays: processes still running version 3's code use it, and the bench
 * measures it.
 */
const APPEND_DECIDED_TOGETHER = `
CREATE FUNCTION tollgate_append_together(
  p_streams text[], p_expected text[], p_offsets int[], p_counts int[],
  p_ids text[], p_types text[], p_data json, p_meta json, p_created timestamptz
) RETURNS TABLE (ord int, ok boolean, revision bigint, pos bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_n int := coalesce(array_length(p_streams, 1), 0);
  v_ok boolean[];
  v_rev bigint[];
  v_base bigint[];
  v_pos bigint[] := array_fill(NULL::bigint, ARRAY[v_n]);
  v_stored text[];
  v_write boolean := false;
  v_first bigint;
  v_xid xid8;
  v_p tollgate_positions;
  v_max bigint;
  r record;
BEGIN
  IF coalesce(array_length(p_ids, 1), 0) > ${MAX_EVENTS_PER_TX} THEN
    RAISE EXCEPTION 'an append transaction holds at most ${MAX_EVENTS_PER_TX} events' USING ERRCODE = '22003';
  END IF;
  SELECT coalesce(array_agg(e.event_id), '{}') INTO v_stored FROM tollgate_events e WHERE e.event_id = ANY (p_ids);
  -- base: revisions base+1.. are written; NULL: decided one by one below. CASE, not OR: the cast never sees 'any'.
  SELECT array_agg(CASE WHEN d.cnt > 0 AND d.holds AND NOT (p_ids[d.off + 1 : d.off + d.cnt] && v_stored)
           THEN coalesce(d.last, -1) END ORDER BY d.i),
         array_agg(coalesce(d.last, -1) + d.cnt ORDER BY d.i)
    INTO v_base, v_rev
    FROM (
      SELECT a.i, a.off, a.cnt, l.last, CASE a.expected
          WHEN 'any' THEN true
          WHEN 'no_stream' THEN l.last IS NULL
          WHEN 'stream_exists' THEN l.last IS NOT NULL
          ELSE coalesce(l.last = a.expected::bigint, false) END AS holds
      FROM unnest(p_streams, p_expected, p_offsets, p_counts) WITH ORDINALITY AS a(stream, expected, off, cnt, i)
      CROSS JOIN LATERAL (SELECT max(e.stream_revision) AS last FROM tollgate_events e WHERE e.stream_id = a.stream) l
    ) d;
  v_ok := array_fill(true, ARRAY[v_n]);
  FOR i IN 1..v_n LOOP
    IF v_base[i] IS NOT NULL THEN
      v_write := true;
    ELSE
      SELECT * INTO r FROM tollgate_append_decide(p_streams[i], p_expected[i],
        coalesce(p_ids[p_offsets[i] + 1 : p_offsets[i] + p_counts[i]], '{}'));
      v_ok[i] := r.ok; v_rev[i] := r.revision; v_pos[i] := r.pos; v_base[i] := r.base;
      v_write := v_write OR r.base IS NOT NULL;
    END IF;
  END LOOP;
  IF v_write THEN
    -- The xid is assigned here, after every decision above.
    v_xid := pg_current_xact_id();
    SELECT * INTO v_p FROM tollgate_positions;
    IF v_xid <= v_p.min_xid THEN
      RAISE EXCEPTION 'append transaction % is older than the schema migration %', v_xid, v_p.min_xid;
    END IF;
    v_first := v_p.base + (v_xid::text::bigint << ${TX_INDEX_BITS});
    INSERT INTO tollgate_events (position, event_id, stream_id, stream_revision, type, data, metadata, created)
    SELECT v_first + k - 1, p_ids[k], p_streams[b.i], v_base[b.i] + (k - b.off), p_types[k], d.value, m.value, p_created
    FROM unnest(p_offsets, p_counts) WITH ORDINALITY AS b(off, cnt, i)
    CROSS JOIN LATERAL generate_series(b.off + 1, b.off + b.cnt) AS k
    JOIN json_array_elements(p_data) WITH ORDINALITY AS d(value, dk) ON d.dk = k
    JOIN json_array_elements(p_meta) WITH ORDINALITY AS m(value, mk) ON m.mk = k
    WHERE v_base[b.i] IS NOT NULL;
    FOR i IN 1..v_n LOOP
      IF v_base[i] IS NOT NULL THEN
        v_pos[i] := v_first + p_offsets[i] + p_counts[i] - 1;
        v_max := greatest(v_max, v_pos[i]);
      END IF;
    END LOOP;
    PERFORM pg_notify('${NOTIFY_CHANNEL}', v_max::text);
  END IF;
  RETURN QUERY SELECT i, v_ok[i], v_rev[i], v_pos[i] FROM generate_series(1, v_n) AS i;
END
$$;
`;

/** Index i holds the statements that bring the schema from version i to i + 1. Never edit a released one. */
export const MIGRATIONS: string[] = [
  EVENTS_TABLE + APPEND_FUNCTION + APPEND_BATCH_FUNCTION,
  APPEND_DECIDE_FUNCTION + APPEND_GROUPED_FUNCTION,
  POSITIONS_FROM_XIDS,
  APPEND_DECIDED_TOGETHER,
];
