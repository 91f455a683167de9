/**
 * The PostgreSQL event store's schema, as numbered migrations. Each process applies the missing ones
 * at start, inside one transaction under an advisory lock, so processes starting together do not race.
 *
 * Commit order: positions come from an identity column, assigned at insert, not at commit. If two
 * appends ran side by side, a subscriber could read position 7 (committed) while position 6 is still
 * in flight, move its checkpoint to 7, and never see 6. Every append therefore takes one
 * transaction-scoped advisory lock before it inserts (tollgate_append below): appends commit one at
 * a time, in position order, so what a reader sees is always a prefix of the final order (plus gaps
 * left by rolled-back transactions, which never fill). docs/ARCHITECTURE.md explains why this and not
 * an xid8 filter: the port's cursor is one bigint.
 */

/** Key of the advisory lock every append takes (an arbitrary constant: "tollgate" in ASCII, truncated). */
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
  v_last bigint;
  v_ok boolean;
  v_n int := coalesce(array_length(p_ids, 1), 0);
  v_first record;
  v_row record;
  v_match boolean;
  v_pos bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(${APPEND_LOCK_KEY});
  SELECT max(e.stream_revision) INTO v_last FROM tollgate_events e WHERE e.stream_id = p_stream;
  -- CASE, not OR: it guarantees the cast never sees 'any'.
  v_ok := CASE p_expected
    WHEN 'any' THEN true
    WHEN 'no_stream' THEN v_last IS NULL
    WHEN 'stream_exists' THEN v_last IS NOT NULL
    ELSE coalesce(v_last = p_expected::bigint, false) END;

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
        RETURN QUERY SELECT true, v_row.stream_revision, v_row.position;
      ELSE
        RETURN QUERY SELECT false, v_last, NULL::bigint;
      END IF;
      RETURN;
    END IF;
  END IF;
  IF NOT v_ok THEN
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

/** Index i holds the statements that bring the schema from version i to i + 1. Never edit a released one. */
export const MIGRATIONS: string[] = [EVENTS_TABLE + APPEND_FUNCTION + APPEND_BATCH_FUNCTION];
