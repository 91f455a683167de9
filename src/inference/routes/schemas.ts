import { z } from 'zod';
import { MODEL_CONFIGS } from '../models';
import { route, RouteContract } from '../../platform/http/contract';
import { chatCompletionSchema, inferenceBodySchema } from './request-schemas';
import {
  chatCompletion,
  chatCompletionChunk,
  inferenceChunk,
  inferenceResponse,
  modelList,
  modelObject,
  openAiStreamError,
  streamError,
} from './response-schemas';
import { PATHS } from './paths';
import { inferenceUsage } from './usage-headers';
import { AUTH_FAILURES, failures, GENERATION_FAILURES, idempotencyHeader, ok, RATE_LIMIT, REPLAYED, REQUEST_ID } from './answers';
import { BUDGET_HEADERS, USAGE_HEADERS } from './usage-headers';
import { callerRoutes } from './caller-schemas';
import { responses } from './responses-schemas';

export * from './request-schemas';
export * from './response-schemas';

/**
 * The inference area's route contracts (docs/INFERENCE.md). Every answer carries x-request-id:
 * the inference request's id (the `requestId` of its events).
 */

export const inference = route({
  method: 'post',
  path: PATHS.inference,
  summary: 'Generate a reply',
  description: "Renders the context under the config's persona, reserves the most it can cost, generates and bills the tokens used.",
  tags: ['inference'],
  security: ['apiKey'],
  headers: idempotencyHeader,
  body: inferenceBodySchema,
  bodyRequired: true,
  responses: {
    200: ok('The whole reply; what it cost is in the x-usage-* headers', {
      schema: inferenceResponse,
      headers: { ...REQUEST_ID, ...RATE_LIMIT, ...USAGE_HEADERS, ...BUDGET_HEADERS, ...REPLAYED },
    }),
    ...failures(false, GENERATION_FAILURES, true),
  },
});

export const streaming = route({
  method: 'post',
  path: PATHS.streaming,
  summary: 'Generate a reply as a stream',
  description:
    'The same request as POST /external/api/inference, answered as text/event-stream: one `data:` frame per piece of text. ' +
    'A failure after the stream started ends it with `event: error` and `data: {"detail": "…"}` (StreamError). ' +
    'With `?include_usage=true` a last `event: usage` frame (InferenceUsage) tells the tokens and cost billed (the headers are sent before they are known).',
  tags: ['inference'],
  security: ['apiKey'],
  query: z.object({
    include_usage: z
      .enum(['true', 'false'])
      .optional()
      .describe('`true`: after the last text frame, one `event: usage` frame (InferenceUsage) with the tokens and cost billed'),
  }),
  headers: idempotencyHeader,
  body: inferenceBodySchema,
  bodyRequired: true,
  responses: {
    200: ok('The reply, piece by piece', {
      contentType: 'text/event-stream',
      eventSchema: z.union([inferenceChunk, streamError, inferenceUsage]),
      headers: { ...REQUEST_ID, ...RATE_LIMIT, ...BUDGET_HEADERS, ...REPLAYED },
    }),
    ...failures(false, GENERATION_FAILURES, true),
  },
});

export const chatCompletions = route({
  method: 'post',
  path: PATHS.chat,
  summary: 'OpenAI-compatible chat completion',
  description:
    `\`model\` names a config (${MODEL_CONFIGS.join(', ')}); any other name is served by the default. ` +
    'With `stream: true` the answer is text/event-stream: ChatCompletionChunk frames, then `data: [DONE]`; a failure after ' +
    'the stream started ends it with an OpenAiStreamError frame. Tools, functions and non-text response formats or content parts are refused with 400.',
  tags: ['openai'],
  security: ['apiKey'],
  headers: idempotencyHeader,
  body: chatCompletionSchema,
  bodyRequired: true,
  responses: {
    200: ok('The completion (JSON), or its chunks when `stream` is true', {
      headers: { ...REQUEST_ID, ...RATE_LIMIT, ...USAGE_HEADERS, ...BUDGET_HEADERS, ...REPLAYED },
      schema: chatCompletion,
      also: [{ contentType: 'text/event-stream', eventSchema: z.union([chatCompletionChunk, openAiStreamError]) }],
    }),
    ...failures(
      true,
      {
        ...GENERATION_FAILURES,
        400: 'An unsupported feature (tools, response_format, non-text parts), or a prompt over the context window',
      },
      true,
    ),
  },
});

export const listModels = route({
  method: 'get',
  path: PATHS.models,
  summary: 'List the models (configs)',
  description:
    "The configs a request may name as `model` (or `config` on the spec routes), in OpenAI's list shape. Free: not billed and not counted in the rate limit, but it answers the key's x-ratelimit-* headers.",
  tags: ['openai'],
  security: ['apiKey'],
  responses: {
    200: ok('Every config', { schema: modelList, headers: { ...REQUEST_ID, ...RATE_LIMIT } }),
    ...failures(true, AUTH_FAILURES, true),
  },
});

export const getModel = route({
  method: 'get',
  path: `${PATHS.models}/:model`,
  summary: 'One model (config)',
  description: "One config by name, in OpenAI's model shape; 404 for a name that is not a config. Free, like the list.",
  tags: ['openai'],
  security: ['apiKey'],
  params: z.object({ model: z.string() }),
  responses: {
    200: ok('The model', { schema: modelObject, headers: { ...REQUEST_ID, ...RATE_LIMIT } }),
    ...failures(true, { ...AUTH_FAILURES, 404: 'No such model' }, true),
  },
});

export const routes: RouteContract[] = [inference, streaming, chatCompletions, responses, listModels, getModel, ...callerRoutes];
