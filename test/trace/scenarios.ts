import { randomUUID } from 'node:crypto';
import type { TestServer } from '../support/harness';
import { api, newUser, TestUser } from '../accounts/e2e/helpers';
import { attach, deposit } from '../billing/e2e/helpers';
import { debitData } from '../support/debit';
import { usd } from '../../src/platform/money';
import { streams } from '../../src/platform/streams';

/**
 * The requests `npm run trace:request` measures. Each scenario sets up what its request needs
 * through the public API, makes the same request once unmeasured (so first-use work such as building
 * the model backend is not counted), and then hands the tool the measured request and the event type
 * whose arrival (then a quiet projector, reactors and queues) ends the window.
 */
export interface Scenario {
  name: string;
  /** One line for --list and the output's head. */
  describe: string;
  /** The event type the request's effects end with. */
  endsWith: string;
  /** `settle` waits until the projector, the reactors and the queues have done everything appended so far. */
  prepare(server: TestServer, settle: () => Promise<void>): Promise<Prepared>;
}

export interface Prepared {
  /** The measured request (or release of the job); resolves when its answer has been read to the end. */
  run(): Promise<void>;
  /** Before the window: true once what `prepare` started has happened (e.g. a job waits in its queue). */
  ready?(): Promise<boolean>;
  /** After the window, unmeasured. */
  cleanup?(): Promise<void>;
}

async function fundedUser(server: TestServer): Promise<TestUser> {
  const u = await newUser(server, 'tracer');
  const a = await attach(server, u, u.personalWs);
  if (a.status !== 200) throw new Error(`attaching a card failed: ${a.status} ${JSON.stringify(a.body)}`);
  const d = await deposit(server, u, u.personalWs, '100');
  if (d.status !== 201) throw new Error(`the deposit failed: ${d.status} ${JSON.stringify(d.body)}`);
  return u;
}

async function createKey(server: TestServer, u: TestUser, name: string): Promise<string> {
  const res = await api(server).post(`/v1/workspaces/${u.personalWs}/keys`).set(u.auth).send({ name });
  if (res.status !== 201) throw new Error(`creating a key failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.secret as string;
}

/** POSTs JSON with fetch and reads the answer to its last byte; throws unless it is a 200/201. */
async function post(server: TestServer, path: string, headers: Record<string, string>, body: unknown): Promise<void> {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${path} answered ${res.status}: ${text.slice(0, 300)}`);
}

const SPEC_BODY = {
  config: 'service_3_pi',
  seed: 7,
  max_tokens: 40,
  context: [
    { type: 'Instruction', text: 'Be kind.' },
    { type: 'Human', text: 'I finally finished my project today!', ts: 1735689600 },
  ],
  metadata: { user_firstname: 'Sam', user_timezone: 'Europe/Paris' },
};

const CHAT_BODY = {
  model: 'service_3_pi',
  messages: [{ role: 'user', content: 'Tell me a short story about a lighthouse.' }],
  max_tokens: 40,
  seed: 7,
  stream: true,
};

function inference(name: string, describe: string, path: string, body: unknown): Scenario {
  return {
    name,
    describe,
    endsWith: 'TokensDebited',
    async prepare(server) {
      const u = await fundedUser(server);
      const secret = await createKey(server, u, 'trace');
      const auth = { authorization: `Bearer ${secret}` };
      await post(server, path, auth, body);
      return { run: () => post(server, path, auth, body) };
    },
  };
}

export const SCENARIOS: readonly Scenario[] = [
  inference(
    'spec',
    'a spec request (POST /external/api/inference, demo model), through to the ledger',
    '/external/api/inference',
    SPEC_BODY,
  ),
  inference(
    'streamed',
    'a streamed OpenAI chat completion (POST /external/api/inference/openai/v1/chat/completions, stream: true), through to the ledger',
    '/external/api/inference/openai/v1/chat/completions',
    CHAT_BODY,
  ),
  {
    name: 'create-key',
    describe: 'creating an API key (POST /v1/workspaces/:ws/keys, session token), through its read-your-writes',
    endsWith: 'ApiKeyCreated',
    async prepare(server) {
      const u = await fundedUser(server);
      await createKey(server, u, 'warm-up');
      return {
        run: async () => {
          await post(server, `/v1/workspaces/${u.personalWs}/keys`, u.auth, { name: 'traced' });
        },
      };
    },
  },
  {
    name: 'reload',
    describe: "one auto-reload charge: the reactor's job, released to the worker, through to AutoReloadSucceeded in the ledger",
    endsWith: 'AutoReloadSucceeded',
    async prepare(server, settle) {
      const s = server.services;
      const u = await fundedUser(server);
      const ws = u.personalWs;
      const put = await api(server)
        .put(`/v1/workspaces/${ws}/billing/auto-reload`)
        .set(u.auth)
        .send({ enabled: true, threshold: '50', amount: '50', monthlyCap: '500' });
      if (put.status !== 200) throw new Error(`configuring auto-reload failed: ${put.status} ${JSON.stringify(put.body)}`);
      const debit = async (amount: bigint) => {
        const data = debitData(ws, { amountNanoUsd: amount });
        await s.store.append(streams.inference(data.requestId), [{ id: randomUUID(), type: 'TokensDebited', data }], {
          expectedRevision: 'no_stream',
        });
      };
      // Warm-up: 100 → 40 USD, one reload to 90, unmeasured.
      await debit(usd(60));
      await settle();
      const types = (await s.store.readStream(streams.billing(ws))).map((e) => e.type);
      if (!types.includes('AutoReloadSucceeded')) throw new Error(`the warm-up reload did not succeed: ${types.join(', ')}`);
      // The measured one: the queue is paused, so the reactor's job waits until the window opens.
      const queue = await s.reloadQueue();
      await queue.pause();
      await debit(usd(45)); // 90 → 45 USD: below the threshold
      return {
        ready: async () => {
          const c = await queue.getJobCounts('paused', 'waiting', 'prioritized');
          return (c.paused ?? 0) + (c.waiting ?? 0) + (c.prioritized ?? 0) > 0;
        },
        run: () => queue.resume(),
      };
    },
  },
];
