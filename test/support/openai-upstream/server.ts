import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the OpenAI chat-completions wire format (POST /v1/chat/completions,
 * streaming SSE and plain JSON), for testing the `openai` model backend without a model server.
 *
 * What it answers is scripted per request by `behave(body)`; by default it echoes the last user
 * message word by word. It records every request (body and headers) and notices when a client
 * hangs up before the reply finished (disconnect detection).
 */
export interface Behaviour {
  /** Text deltas to send, in order. */
  chunks: string[];
  /** Pause before each chunk. */
  delayMs?: number;
  /** Break the connection after this many chunks (a failure mid-stream). */
  failAfter?: number;
  /** Send this JSON error event after `failAfter` chunks instead of breaking the connection. */
  errorEventAfter?: number;
  /** Answer with this HTTP status and an OpenAI error body instead of a stream. */
  status?: number;
  finishReason?: 'stop' | 'length';
}

export interface RecordedRequest {
  body: {
    model?: string;
    messages?: Array<{ role: string; content: string }>;
    temperature?: number;
    top_p?: number;
    max_tokens?: number;
    stop?: string[];
    stream?: boolean;
    seed?: number;
  };
  headers: IncomingMessage['headers'];
}

export interface OpenAiUpstream {
  /** Base URL to configure, e.g. http://127.0.0.1:1234/v1 */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Streams whose client went away before the server finished sending. */
  disconnects: number;
  /** Streams sent to the end. */
  completed: number;
  behave: (body: RecordedRequest['body']) => Behaviour;
  /** Resolves at the next client disconnect. */
  nextDisconnect(): Promise<void>;
  close(): Promise<void>;
}

export function echoBehaviour(body: RecordedRequest['body']): Behaviour {
  const last = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user')?.content ?? '';
  const words = `You said: ${last}`.split(/(?= )/);
  return { chunks: words };
}

export async function startOpenAiUpstream(behave: OpenAiUpstream['behave'] = echoBehaviour): Promise<OpenAiUpstream> {
  const waiters: Array<() => void> = [];
  const state: OpenAiUpstream = {
    baseUrl: '',
    requests: [],
    disconnects: 0,
    completed: 0,
    behave,
    nextDisconnect: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close: async () => undefined,
  };
  // A client that went away mid-request (a killed api process) must not fail the test process.
  const server: Server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));

  async function handle(req: IncomingMessage, res: ServerResponse) {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    let raw = '';
    for await (const c of req) raw += c;
    const body = JSON.parse(raw) as RecordedRequest['body'];
    state.requests.push({ body, headers: req.headers });
    const b = state.behave(body);
    if (b.status) {
      res.writeHead(b.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'scripted failure', type: 'server_error' } }));
      return;
    }
    const id = 'chatcmpl-upstream';
    const created = Math.floor(Date.now() / 1000);
    if (!body.stream) {
      // Model time: the pauses a stream of these chunks would take.
      if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs! * b.chunks.length));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: b.chunks.join('') }, finish_reason: b.finishReason ?? 'stop' }],
        }),
      );
      return;
    }
    let gone = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        gone = true;
        state.disconnects++;
        for (const w of waiters.splice(0)) w();
      }
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (data: unknown) => res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
    send({
      id,
      object: 'chat.completion.chunk',
      created,
      model: body.model,
      choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }],
    });
    for (let i = 0; i < b.chunks.length; i++) {
      if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
      if (gone) return;
      if (b.failAfter === i) {
        // Let what was written reach the client, then break the connection (no final chunk).
        await new Promise((r) => setTimeout(r, 30));
        res.socket?.destroy();
        return;
      }
      if (b.errorEventAfter === i) {
        send({ error: { message: 'scripted failure mid-stream', type: 'server_error' } });
        res.end();
        return;
      }
      send({
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        choices: [{ index: 0, delta: { content: b.chunks[i] }, finish_reason: null }],
      });
    }
    if (gone) return;
    send({
      id,
      object: 'chat.completion.chunk',
      created,
      model: body.model,
      choices: [{ index: 0, delta: {}, finish_reason: b.finishReason ?? 'stop' }],
    });
    send('[DONE]');
    res.end();
    state.completed++;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  state.baseUrl = `http://127.0.0.1:${port}/v1`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
