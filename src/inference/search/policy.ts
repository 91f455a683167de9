/**
 * When to search: only when the caller allows it (web_search, default true), a provider is
 * configured, and the last Human turn looks like it needs fresh facts — news, prices, weather,
 * scores, "latest", "today", a recent year, "who is the current …". Everything else (chit-chat,
 * rewriting, JSON formatting) is answered without a search, so it costs nothing extra.
 */
const FRESH = [
  /\b(today|tonight|tomorrow|yesterday|this (week|month|year|morning|evening)|right now|currently|at the moment)\b/i,
  /\b(latest|newest|recent(ly)?|breaking|up[- ]to[- ]date|as of|so far this)\b/i,
  /\b(news|headlines?|weather|forecast|temperature outside|stock|share price|exchange rate|price of|prices?|score|results?|standings|election|polls?|release date|launch(ed)?|announced?)\b/i,
  /\b(who (is|are) the (current|new)|current (ceo|president|prime minister|champion|leader|version|price|rate))\b/i,
  /\b(20[2-9]\d)\b/,
  /\b(search|look up|google|find online|on the web|on the internet)\b/i,
];

export function needsFreshFacts(lastHuman: string): boolean {
  const text = lastHuman.slice(0, 2000);
  return FRESH.some((re) => re.test(text));
}

/** The query sent to the provider: the last Human turn, on one line, at most 200 characters. */
export function searchQuery(lastHuman: string): string {
  return lastHuman.replace(/\s+/g, ' ').trim().slice(0, 200);
}
