import { ApiError, describeDetail } from '../../api';
import type { ApiKey } from '../../resources';

/** The key a pasted secret belongs to, by its visible prefix and last four characters. */
export function keyOfSecret(keys: ApiKey[], secret: string): ApiKey | undefined {
  const s = secret.trim();
  return keys.find((k) => s.startsWith(k.prefix) && s.endsWith(k.last4));
}

export function inferenceError(err: ApiError): string {
  const d = describeDetail(err.status, err.detail);
  if (err.status === 401) return `The key was refused (401): ${d}. Check the secret, or create a new key.`;
  if (err.status === 402) return `Not enough credit (402): ${d}. Add credit on the Billing page.`;
  if (err.status === 429) return `Rate limited (429): ${d}`;
  return `${d} (HTTP ${err.status})`;
}

/** Reads `data: {…}` lines of a text/event-stream body and yields each chunk's text. */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buf += decoder.decode(value, { stream: true });
    if (done) buf += decoder.decode();
    let sep: number;
    while ((sep = buf.search(/\r?\n\r?\n/)) >= 0) {
      const event = buf.slice(0, sep);
      buf = buf.slice(buf.slice(sep).match(/^\r?\n\r?\n/)![0].length + sep);
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (!data || data === '[DONE]') continue;
      const parsed = JSON.parse(data) as { text?: string; detail?: unknown };
      if (parsed.detail !== undefined && parsed.text === undefined) throw new ApiError(500, parsed.detail);
      if (parsed.text) yield parsed.text;
    }
    if (done) return;
  }
}
