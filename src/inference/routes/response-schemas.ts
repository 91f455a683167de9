import { z } from 'zod';
import { MODEL_CONFIGS } from '../models';
import { validationIssue } from '../../platform/http/error-schemas';

/** The answers of the inference routes: the spec's JSON and stream frames, and OpenAI's shapes. */

const created = z.number().describe('Unix time in seconds (with a fraction)');
const model = z.enum(MODEL_CONFIGS);

export const inferenceResponse = z.object({ created, text: z.string() }).meta({ id: 'InferenceResponse' });

export const inferenceChunk = z
  .object({ created, idx: z.number().int().min(0), index: z.number().int().min(0).describe('Same as idx'), text: z.string() })
  .meta({ id: 'InferenceChunk' });

export const streamError = z
  .object({ detail: z.string() })
  .meta({ id: 'StreamError', description: 'Sent as `event: error` when the stream fails after it started' });

const finishReason = z.enum(['stop', 'length']);

export const chatUsage = z
  .object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    cost: z
      .string()
      .regex(/^\d+(\.\d{1,9})?$/)
      .describe('What the call cost, USD as an exact decimal string (the TokensDebited amount)'),
  })
  .meta({ id: 'ChatCompletionUsage' });

export const chatCompletion = z
  .object({
    id: z.string().describe('chatcmpl-<request id>'),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model,
    system_fingerprint: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
        logprobs: z.null(),
        finish_reason: finishReason,
      }),
    ),
    usage: chatUsage,
  })
  .meta({ id: 'ChatCompletion' });

export const chatCompletionChunk = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.number().int(),
    model,
    system_fingerprint: z.string().optional(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
        logprobs: z.null(),
        finish_reason: finishReason.nullable(),
      }),
    ),
    usage: chatUsage.optional().describe('Only in the last chunk (no choices), when stream_options.include_usage'),
  })
  .meta({ id: 'ChatCompletionChunk' });

const usdString = z.string().regex(/^\d+(\.\d{1,9})?$/);

/** A 402 that a budget (not the balance) refused: which budget, what is left, when it resets (src/inference/usecases/refusals.ts). */
export const budgetRefusalBody = z
  .object({
    scope: z.string().describe('`key` or `member`: whose budget refused'),
    keyId: z.string(),
    userId: z.string().nullable().describe('The member whose budget refused (scope `member`), else null'),
    period: z.string().describe('The budget period, e.g. `monthly`'),
    limit: usdString,
    spent: usdString,
    held: usdString.describe('Held by calls still running'),
    remaining: usdString,
    required: usdString.describe('What this call would have held'),
    resetsAt: z.string().describe('When the period ends (ISO 8601)'),
  })
  .meta({ id: 'BudgetRefusal' });

const openAiErrorObject = z.object({
  message: z.string(),
  type: z.string(),
  code: z.string().nullable().describe('`budget_exceeded` for a budget refusal, `invalid_api_key` for a 401'),
  budget: budgetRefusalBody.optional(),
});

/** Errors under the OpenAI-compatible paths: `detail` as everywhere, plus OpenAI's `error` so its SDKs show a message. */
export const openAiErrorBody = z
  .object({
    detail: z.union([z.string(), z.array(validationIssue)]),
    budget: budgetRefusalBody.optional().describe('On a 402 a budget refused (not the balance)'),
    error: openAiErrorObject
      .optional()
      .describe('Absent when the body is refused before the route reads it (not JSON, not UTF-8, too large)'),
  })
  .meta({ id: 'OpenAiError' });

export const openAiStreamError = z
  .object({ error: openAiErrorObject, detail: z.string() })
  .meta({ id: 'OpenAiStreamError', description: 'A `data:` frame that ends a stream which failed after it started' });

export const modelObject = z
  .object({ id: model, object: z.literal('model'), created: z.number().int(), owned_by: z.literal('tollgate') })
  .meta({ id: 'Model' });

export const modelList = z.object({ object: z.literal('list'), data: z.array(modelObject) }).meta({ id: 'ModelList' });
