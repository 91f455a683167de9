import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SearxngSearch } from '../../../src/inference/search/searxng';
import { needsFreshFacts } from '../../../src/inference/search/policy';
import type { TestServer } from '../../support/harness';
import { authHeaders, inferenceEvents, seedFundedKey, SeededKey } from './support/seed';
import { ScriptedBackend, startInferenceServer } from './support/server';

/** A local SearXNG speaking its JSON API. */
let searx: Server;
let searxUrl: string;
const queries: URLSearchParams[] = [];
let failing = false;

beforeAll(async () => {
  searx = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    queries.push(url.searchParams);
    if (failing || url.pathname !== '/search') {
      res.writeHead(500).end('boom');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        query: url.searchParams.get('q'),
        results: [
          { title: 'Election results live', url: 'https://news.example/results', content: 'Counting continues tonight.' },
          { title: 'Not a web page', url: 'javascript:alert(1)', content: 'dropped' },
          { title: 'Analysis', url: 'https://paper.example/analysis', content: 'What the numbers say.' },
          { title: 'Third', url: 'https://third.example/', content: 'More.' },
        ],
      }),
    );
  });
  await new Promise<void>((r) => searx.listen(0, '127.0.0.1', r));
  searxUrl = `http://127.0.0.1:${(searx.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => searx.close(() => r())));

describe('the SearXNG adapter', () => {
  test('asks the JSON API and keeps web results only', async () => {
    const results = await new SearxngSearch(searxUrl, { timeoutMs: 2000 }).search('who won the election today', { limit: 2 });
    const q = queries.at(-1)!;
    expect(q.get('q')).toBe('who won the election today');
    expect(q.get('format')).toBe('json');
    expect(results).toEqual([
      { title: 'Election results live', url: 'https://news.example/results', snippet: 'Counting continues tonight.' },
      { title: 'Analysis', url: 'https://paper.example/analysis', snippet: 'What the numbers say.' },
    ]);
  });

  test('an HTTP failure rejects', async () => {
    failing = true;
    try {
      await expect(new SearxngSearch(searxUrl, { timeoutMs: 2000 }).search('x', { limit: 3 })).rejects.toThrow(/HTTP 500/);
    } finally {
      failing = false;
    }
  });
});

test('the fresh-facts heuristic', () => {
  for (const q of [
    'What is the weather in Paris today?',
    'latest news about the election',
    'Who is the current CEO of Acme?',
    'price of bitcoin',
    'What happened in 2025?',
  ]) {
    expect(needsFreshFacts(q)).toBe(true);
  }
  for (const q of [
    'Hi! How are you?',
    'Rewrite this paragraph in a formal tone.',
    'Give me a JSON object with a name field.',
    'I feel sad.',
  ]) {
    expect(needsFreshFacts(q)).toBe(false);
  }
});

describe('web search in the service', () => {
  const backend = new ScriptedBackend(() => ({ chunks: ['ok'] }));
  let server: TestServer;
  let key: SeededKey;
  beforeAll(async () => {
    server = await startInferenceServer({ SEARXNG_URL: searxUrl, SEARXNG_TIMEOUT_MS: '2000' }, { backend, search: undefined });
    key = await seedFundedKey(server.services);
  });
  afterAll(() => server.close());

  const ask = (text: string, extra: Record<string, unknown> = {}) =>
    fetch(`${server.url}/external/api/inference`, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text }], config: 'service_3_pi', max_tokens: 5, ...extra }),
    });
  const requestedOf = async (res: Response) =>
    (await inferenceEvents(server.services, res.headers.get('x-request-id')!))[0].data as { promptTokens: number; webSearch: boolean };

  test('a question that needs fresh facts is searched; results enter the prompt with sources and are billed', async () => {
    const before = queries.length;
    const searched = await ask('Who won the election today?');
    expect(searched.status).toBe(200);
    expect(queries.length).toBe(before + 1);
    const prompt = backend.calls.at(-1)!.prompt;
    expect(prompt.text).toContain('Web search results for "Who won the election today?"');
    expect(prompt.text).toContain('[1] Election results live (https://news.example/results): Counting continues tonight.');
    expect(prompt.messages[0].content).toContain('https://paper.example/analysis');
    const withSearch = await requestedOf(searched);
    expect(withSearch.webSearch).toBe(true);

    const plain = await requestedOf(await ask('Who won the election today?', { web_search: false }));
    expect(plain.webSearch).toBe(false);
    expect(withSearch.promptTokens).toBeGreaterThan(plain.promptTokens + 20);
  });

  test('web_search false: the provider is never called', async () => {
    const before = queries.length;
    for (const text of ['What is the weather today?', 'latest news please', 'Hello']) {
      expect((await ask(text, { web_search: false })).status).toBe(200);
    }
    expect(queries.length).toBe(before);
  });

  test('a request that does not need fresh facts is not searched', async () => {
    const before = queries.length;
    await ask('Hi, how are you?');
    expect(queries.length).toBe(before);
  });

  test('a failing provider: the request is answered without search', async () => {
    failing = true;
    try {
      const res = await ask('latest news today?');
      expect(res.status).toBe(200);
      expect((await requestedOf(res)).webSearch).toBe(false);
    } finally {
      failing = false;
    }
  });
});
