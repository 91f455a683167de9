import { z } from 'zod';
import { route } from '../../platform/http/contract';
import { DEFAULT_MODEL, isModelConfig, MODEL_CONFIGS } from '../models';
import { DEFAULTS, InferenceRequest } from '../request';
import { failures, GENERATION_FAILURES, idempotencyHeader, ok, RATE_LIMIT, REPLAYED, REQUEST_ID } from './answers';
import { PATHS } from './paths';
import { maxTokens, metadataSchema, seed, unit } from './request-schemas';
import { openAiStreamError } from './response-schemas';
import { BUDGET_HEADERS, USAGE_HEADERS } from './usage-headers';

/**
 * OpenAI's Responses API (POST …/openai/v1/responses), text only: what the newest OpenAI SDKs and
 * the AI SDK's default `openai(model)` provider send. It is the chat route's request in another
 * shape: the same use case meters, limits and replays it.
 */

const TEXT_ONLY = 'only text content parts are supported';
const ROLE_TO_TYPE = { system: 'Instruction', developer: 'Instruction', user: 'Human', assistant: 'AI' } as const;

/** An input message's content: a string, or text parts (`input_text`, and `output_text` for earlier assistant turns). */
const content = z.union([
  z.string(),
  z.array(
    z.object({
      type: z.enum(['input_text', 'output_text', 'text'], { error: TEXT_ONLY }),
      text: z.string({ error: 'a text part needs a text string' }),
    }),
  ),
]);

const inputMessage = z.object({
  type: z.literal('message', { error: `input items must be messages (${TEXT_ONLY})` }).optional(),
  role: z.enum(['system', 'developer', 'user', 'assistant'], {
    error: "role must be one of 'system', 'developer', 'user', 'assistant'",
  }),
  content,
});

/**
 * Features of the Responses API this service does not offer: refused with 400 naming the feature
 * (as the chat route refuses tools), never accepted and ignored. Returns the refusal, or null.
 */
export function unsupportedResponsesFeature(body: unknown): string | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  const given = (v: unknown) => (Array.isArray(v) ? v.length > 0 : v !== undefined && v !== null);
  if (given(b.tools))
    return 'tools are not supported: this service generates text only and never calls tools; send the request without "tools"';
  if (b.tool_choice !== undefined && b.tool_choice !== null && b.tool_choice !== 'none' && b.tool_choice !== 'auto')
    return 'tools are not supported: "tool_choice" may only be "none" or "auto"';
  if (given(b.previous_response_id) || given(b.conversation) || given(b.prompt))
    return 'stored conversations are not supported: responses are not stored; send the whole conversation in "input"';
  if (b.background === true) return 'background responses are not supported: send the request without "background"';
  const format = (b.text as { format?: { type?: unknown } } | null | undefined)?.format;
  if (format !== undefined && format !== null && format.type !== 'text') {
    return `text.format "${String(format.type).slice(0, 40)}" is not supported: replies are free text (ask for JSON in the prompt)`;
  }
  if (Array.isArray(b.input)) {
    for (const item of b.input as Array<Record<string, unknown>>) {
      if (!item || typeof item !== 'object') continue;
      if (item.type !== undefined && item.type !== 'message')
        return `input items of type "${String(item.type).slice(0, 40)}" are not supported: ${TEXT_ONLY} messages`;
      const part = Array.isArray(item.content)
        ? (item.content as Array<{ type?: unknown }>).find(
            (p) => p && typeof p === 'object' && typeof p.type === 'string' && !['input_text', 'output_text', 'text'].includes(p.type),
          )
        : undefined;
      if (part) return `${TEXT_ONLY}: this service reads text only (got a "${String(part.type).slice(0, 40)}" part)`;
    }
  }
  return null;
}

export const responsesRequestSchema = z
  .object({
    model: z.string().nullish(),
    input: z.union([
      z.string({ error: 'input must be a string or a list of messages' }).min(1, { error: 'input must not be empty' }),
      z
        .array(inputMessage, { error: 'input must be a string or a list of messages' })
        .min(1, { error: 'input must hold at least one message' }),
    ]),
    instructions: z.string({ error: 'instructions must be a string' }).nullish(),
    max_output_tokens: maxTokens.nullish(),
    temperature: unit('temperature', DEFAULTS.temperature),
    top_p: unit('top_p', DEFAULTS.topP),
    stream: z.boolean({ error: 'stream must be true or false' }).nullish(),
    seed,
    web_search: z.boolean({ error: 'web_search must be true or false' }).nullish(),
    /** The user_* fields of the spec's metadata, when present (other keys are ignored). */
    metadata: metadataSchema,
  })
  .transform((b) => {
    const turns = typeof b.input === 'string' ? [{ role: 'user' as const, content: b.input }] : b.input;
    const request: InferenceRequest = {
      config: isModelConfig(b.model) ? b.model : DEFAULT_MODEL,
      context: [
        ...(b.instructions ? [{ type: 'Instruction' as const, text: b.instructions }] : []),
        ...turns.map((m) => ({
          type: ROLE_TO_TYPE[m.role],
          text: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
        })),
      ],
      temperature: b.temperature,
      topP: b.top_p,
      maxTokens: b.max_output_tokens ?? DEFAULTS.maxTokens,
      stop: [],
      webSearch: b.web_search ?? DEFAULTS.webSearch,
      metadata: b.metadata,
      ...(b.seed !== null && b.seed !== undefined ? { seed: b.seed } : {}),
    };
    return {
      request,
      stream: b.stream === true,
      echo: {
        instructions: b.instructions ?? null,
        max_output_tokens: b.max_output_tokens ?? null,
        temperature: b.temperature,
        top_p: b.top_p,
      },
    };
  });

const usd = z.string().regex(/^\d+(\.\d{1,9})?$/);

export const responseUsage = z
  .object({
    input_tokens: z.number().int(),
    input_tokens_details: z.object({ cached_tokens: z.literal(0) }),
    output_tokens: z.number().int(),
    output_tokens_details: z.object({ reasoning_tokens: z.literal(0) }),
    total_tokens: z.number().int(),
    cost: usd.describe('What the call cost, USD as an exact decimal string (the TokensDebited amount)'),
  })
  .meta({ id: 'ResponseUsage' });

const outputText = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.never()),
  logprobs: z.array(z.never()),
});

const outputMessage = z.object({
  type: z.literal('message'),
  id: z.string().describe('msg_<request id>'),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  role: z.literal('assistant'),
  content: z.array(outputText),
});

export const responseObject = z
  .object({
    id: z.string().describe('resp_<request id>'),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    error: z.null(),
    incomplete_details: z
      .object({ reason: z.literal('max_output_tokens') })
      .nullable()
      .describe('Set when the reply stopped at max_output_tokens'),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().int().nullable(),
    model: z.enum(MODEL_CONFIGS),
    output: z.array(outputMessage),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.null(),
    store: z.literal(false).describe('Responses are never stored'),
    temperature: z.number(),
    top_p: z.number(),
    text: z.object({ format: z.object({ type: z.literal('text') }) }),
    tool_choice: z.literal('none'),
    tools: z.array(z.never()),
    truncation: z.literal('disabled'),
    metadata: z.record(z.string(), z.string()),
    usage: responseUsage.nullable().describe('Null until the response is complete (in the stream’s first events)'),
  })
  .meta({ id: 'Response' });

const seq = { sequence_number: z.number().int() };
const part = { item_id: z.string(), output_index: z.literal(0), content_index: z.literal(0) };

/** The typed events of a streamed response, each sent as `event: <type>` with the same `type` in its data. */
export const responseStreamEvent = z
  .union([
    z.object({
      type: z.enum(['response.created', 'response.in_progress', 'response.completed', 'response.incomplete']),
      response: responseObject,
      ...seq,
    }),
    z.object({
      type: z.enum(['response.output_item.added', 'response.output_item.done']),
      output_index: z.literal(0),
      item: outputMessage,
      ...seq,
    }),
    z.object({ type: z.enum(['response.content_part.added', 'response.content_part.done']), ...part, part: outputText, ...seq }),
    z.object({ type: z.literal('response.output_text.delta'), ...part, delta: z.string(), logprobs: z.array(z.never()), ...seq }),
    z.object({ type: z.literal('response.output_text.done'), ...part, text: z.string(), logprobs: z.array(z.never()), ...seq }),
    openAiStreamError.extend({ type: z.literal('error'), code: z.string().nullable(), message: z.string(), param: z.null(), ...seq }),
  ])
  .meta({ id: 'ResponseStreamEvent' });

export const responses = route({
  method: 'post',
  path: PATHS.responses,
  summary: 'OpenAI-compatible response (the Responses API), text only',
  description:
    `\`model\` names a config (${MODEL_CONFIGS.join(', ')}); any other name is served by the default. \`input\` is a string or a list ` +
    'of messages with text content; `instructions`, `max_output_tokens`, `temperature`, `top_p` apply as in chat completions. ' +
    'With `stream: true` the answer is text/event-stream of typed events (`event: response.created` … `response.completed`, or ' +
    '`response.incomplete` at max_output_tokens); a failure after the stream started sends `event: error`. Metered, rate limited ' +
    'and idempotent like chat completions; `usage.cost` is what the call cost. Tools, stored conversations ' +
    '(`previous_response_id`), background mode and non-text formats or parts are refused with 400. Nothing is stored.',
  tags: ['openai'],
  security: ['apiKey'],
  headers: idempotencyHeader,
  body: responsesRequestSchema,
  bodyRequired: true,
  responses: {
    200: ok('The response (JSON), or its events when `stream` is true', {
      headers: { ...REQUEST_ID, ...RATE_LIMIT, ...USAGE_HEADERS, ...BUDGET_HEADERS, ...REPLAYED },
      schema: responseObject,
      also: [{ contentType: 'text/event-stream', eventSchema: responseStreamEvent }],
    }),
    ...failures(
      true,
      {
        ...GENERATION_FAILURES,
        400: 'An unsupported feature (tools, previous_response_id, background, text.format, non-text parts), or a prompt over the context window',
      },
      true,
    ),
  },
});
