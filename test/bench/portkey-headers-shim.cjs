/**
 * Preloaded into the Portkey gateway by bench:peer (`node --require`). @portkey-ai/gateway 1.15.2
 * appends its x-portkey-* headers to the Response that fetch returned, whose headers are immutable
 * on Node 20 (undici): every streamed reply then fails with `TypeError: immutable` (Portkey issues
 * #1389 and #1550; its PR #1551 clones the response first). This does the same at the source: each
 * fetch Response is handed over as a new Response with the same body and a mutable copy of its headers.
 */
const realFetch = globalThis.fetch;
globalThis.fetch = async function fetchWithMutableHeaders(...args) {
  const res = await realFetch.apply(this, args);
  // 101, 204, 205 and 304 cannot be constructed with a body; Portkey never proxies them here.
  if (res.status < 200 || res.status === 204 || res.status === 205 || res.status === 304) return res;
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: new Headers(res.headers) });
};
