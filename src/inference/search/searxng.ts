import type { SearchProvider, SearchResult } from './port';

/**
 * SearXNG through its JSON API: GET {base}/search?q=…&format=json (the instance must list `json`
 * under search.formats in its settings.yml).
 */
export class SearxngSearch implements SearchProvider {
  readonly name = 'searxng';

  constructor(
    private readonly baseUrl: string,
    private readonly opts: { timeoutMs: number; fetch?: typeof fetch } = { timeoutMs: 3000 },
  ) {}

  async search(query: string, { limit, signal }: { limit: number; signal?: AbortSignal }): Promise<SearchResult[]> {
    const url = new URL('search', this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    url.searchParams.set('safesearch', '1');
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const res = await (this.opts.fetch ?? fetch)(url, {
      headers: { accept: 'application/json' },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    if (!res.ok) throw new Error(`SearXNG answered HTTP ${res.status}`);
    const body = (await res.json()) as { results?: Array<{ title?: unknown; url?: unknown; content?: unknown }> };
    const out: SearchResult[] = [];
    for (const r of body.results ?? []) {
      if (typeof r.url !== 'string' || !/^https?:\/\//.test(r.url)) continue;
      out.push({
        title: typeof r.title === 'string' ? r.title.slice(0, 200) : '',
        url: r.url.slice(0, 500),
        snippet: typeof r.content === 'string' ? r.content.slice(0, 500) : '',
      });
      if (out.length >= limit) break;
    }
    return out;
  }
}
