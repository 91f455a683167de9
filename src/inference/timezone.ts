/**
 * Time zones: the caller's `user_timezone` must be an IANA name (Region/City, plus the IANA
 * aliases such as UTC, GMT, US/Eastern that Intl knows). Offsets like "+05:00" and unknown names
 * are refused.
 */
const NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;
const cache = new Map<string, string | null>();

/** The canonical name of an IANA time zone, or null when `name` is not one. */
export function canonicalTimeZone(name: string): string | null {
  if (typeof name !== 'string' || name.length > 64 || !NAME.test(name)) return null;
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  let canonical: string | null;
  try {
    canonical = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    canonical = null;
  }
  if (cache.size < 2000) cache.set(name, canonical);
  return canonical;
}

export function isIanaTimeZone(name: string): boolean {
  return canonicalTimeZone(name) !== null;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      weekday: 'long',
      year: 'numeric',
      month: 'long',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** "Tuesday 4 March 2025, 14:05" in the given zone. */
export function formatLocalTime(at: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    formatter(timeZone)
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.weekday} ${parts.day} ${parts.month} ${parts.year}, ${parts.hour}:${parts.minute}`;
}

const stampFormatters = new Map<string, Intl.DateTimeFormat>();

/** "2025-03-04 14:05" in the given zone (for message timestamps). */
export function formatStamp(at: Date, timeZone: string): string {
  let f = stampFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    stampFormatters.set(timeZone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
}
