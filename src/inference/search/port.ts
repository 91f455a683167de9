/** The web search port. Adapters: ./searxng (its JSON API). */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchProvider {
  readonly name: string;
  /** At most `limit` results. Rejects on failure; the caller decides what a failure means. */
  search(query: string, opts: { limit: number; signal?: AbortSignal }): Promise<SearchResult[]>;
}
