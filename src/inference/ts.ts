/**
 * `ts` of a context entry: seconds since the Unix epoch. A value that only makes sense as
 * milliseconds is read as milliseconds: the reference API's own sample sends milliseconds.
 *
 * 1e11 seconds is the year 5138, while 1e11 milliseconds is March 1973, so any value above 1e11
 * is milliseconds. Values above 1e14 (milliseconds in the year 5138) and negative values are not
 * timestamps at all.
 */
export const TS_MS_THRESHOLD = 1e11;
export const TS_MAX = 1e14;

export function isValidTs(ts: number): boolean {
  return Number.isFinite(ts) && ts >= 0 && ts <= TS_MAX;
}

/** Milliseconds since the epoch for a valid `ts` (see isValidTs). */
export function tsToMillis(ts: number): number {
  if (!isValidTs(ts)) throw new RangeError(`ts ${ts} is not a timestamp`);
  return ts > TS_MS_THRESHOLD ? Math.round(ts) : Math.round(ts * 1000);
}

export function parseTs(ts: number): Date {
  return new Date(tsToMillis(ts));
}
