import { createInferenceModule, InferenceModuleOptions } from '../../../../src/inference/module';
import type { BackendFinish, GenerateParams, ModelBackend } from '../../../../src/inference/backend';
import { hotPathReadModels } from '../../../support/hot-path';
import { startTestServer, TestServer } from '../../../support/harness';
import { authHeaders, seedFundedKey, type SeededKey } from './seed';

/** A test server running the read models the hot path needs and the inference module. */
export function startInferenceServer(overrides: Record<string, string> = {}, moduleOpts: InferenceModuleOptions = {}): Promise<TestServer> {
  return startTestServer(
    { SWEEPER_ENABLED: 'false', ...overrides },
    { modules: [hotPathReadModels, createInferenceModule({ search: null, ...moduleOpts })] },
  );
}

export interface FundedServer {
  server: TestServer;
  /** A key of a workspace with $100 on it. */
  key: SeededKey;
  /** POSTs `body` as JSON to `path` with the key. */
  post(path: string, body: unknown): Promise<Response>;
}

/**
 * Registers the file's (or describe block's) beforeAll / afterAll: startInferenceServer(...args) and
 * a funded key. The returned object is filled in beforeAll: read its fields inside hooks and tests.
 */
export function fundedServerFixture(...args: Parameters<typeof startInferenceServer>): FundedServer {
  const t: FundedServer = {
    server: undefined as unknown as TestServer,
    key: undefined as unknown as SeededKey,
    post: (path, body) => fetch(t.server.url + path, { method: 'POST', headers: authHeaders(t.key.secret), body: JSON.stringify(body) }),
  };
  beforeAll(async () => {
    t.server = await startInferenceServer(...args);
    t.key = await seedFundedKey(t.server.services, { usd: '100' });
  });
  afterAll(() => t.server.close());
  return t;
}

/** A backend that replies with fixed chunks (optionally slowly, optionally failing after some). */
export class ScriptedBackend implements ModelBackend {
  readonly kind = 'scripted';
  calls: GenerateParams[] = [];
  constructor(public script: (p: GenerateParams) => { chunks: string[]; delayMs?: number; failAfter?: number; finish?: BackendFinish }) {}
  modelName(): string {
    return 'scripted';
  }
  async *generate(p: GenerateParams): AsyncGenerator<string, BackendFinish, undefined> {
    this.calls.push(p);
    const s = this.script(p);
    for (let i = 0; i < s.chunks.length; i++) {
      if (s.failAfter === i) throw new Error('scripted upstream failure');
      if (s.delayMs) await new Promise((r) => setTimeout(r, s.delayMs));
      if (p.signal.aborted) return 'stop';
      yield s.chunks[i];
    }
    return s.finish ?? 'stop';
  }
}
