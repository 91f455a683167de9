/**
 * The `data:` frames of one streamed chat completion. Every chunk of a reply shares its id,
 * created, model and fingerprint: that head is encoded once per reply, and each chunk encodes only
 * its delta and finish_reason. The bytes are those of sseFrame(chunk object), key order included
 * (a unit test compares them).
 */
export function chatChunkFrames(id: string, created: number, model: string, fingerprint: string) {
  const head =
    `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${JSON.stringify(created)},` +
    `"model":${JSON.stringify(model)},"system_fingerprint":${JSON.stringify(fingerprint)},"choices":[{"index":0,"delta":`;
  const frame = (delta: string, finish: string | null) => `${head}${delta},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
  return {
    /** A chunk of text; the first one also carries the assistant's role. */
    text: (text: string, first: boolean) => frame(`{${first ? '"role":"assistant",' : ''}"content":${JSON.stringify(text)}}`, null),
    /** The last chunk with choices: its finish_reason, and the role when no text came before. */
    finish: (reason: string, first: boolean) => frame(first ? '{"role":"assistant","content":""}' : '{}', reason),
  };
}
