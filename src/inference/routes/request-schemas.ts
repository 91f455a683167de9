import { z } from 'zod';
import { DEFAULT_MODEL, isModelConfig, MODEL_CONFIGS } from '../models';
import { isValidTs, tsToMillis } from '../ts';
import { DEFAULTS, InferenceRequest, LIMITS, UserMetadata } from '../request';
import { canonicalTimeZone } from '../timezone';

/**
 * Request bodies of the inference routes (zod; unknown fields are stripped, i.e. accepted and
 * ignored). `null` on an optional field means "not given". A failure becomes 422 with FastAPI's
 * detail list (loc starting with "body").
 */

export const unit = (name: string, def: number) =>
  z
    .number({ error: `${name} must be a number` })
    .min(0, { error: `${name} must be between 0 and 1` })
    .max(1, { error: `${name} must be between 0 and 1` })
    .nullish()
    .transform((v) => v ?? def);

export const maxTokens = z
  .number({ error: 'max_tokens must be an integer' })
  .int({ error: 'max_tokens must be an integer' })
  .min(1, { error: 'max_tokens must be greater than 0' })
  .max(LIMITS.maxTokens, { error: `max_tokens must be at most ${LIMITS.maxTokens}` });

const stopString = z.string().max(LIMITS.stopStringLength, { error: `a stop string is at most ${LIMITS.stopStringLength} characters` });
const stopList = z.array(stopString).max(LIMITS.stopStrings, { error: `at most ${LIMITS.stopStrings} stop strings` });

const metaString = z
  .string()
  .max(LIMITS.metadataLength, { error: `at most ${LIMITS.metadataLength} characters` })
  .nullish();

export const metadataSchema = z
  .object({
    user_firstname: metaString,
    user_timezone: z
      .string()
      .nullish()
      .transform((tz, ctx) => {
        if (tz === null || tz === undefined || tz === '') return undefined;
        const canonical = canonicalTimeZone(tz);
        if (!canonical) {
          ctx.addIssue({ code: 'custom', message: `"${tz.slice(0, 64)}" is not an IANA time zone name (such as Europe/Paris)` });
          return z.NEVER;
        }
        return canonical;
      }),
    user_country: metaString,
    user_region: metaString,
    user_city: metaString,
  })
  .nullish()
  .transform((m): UserMetadata => {
    const out: UserMetadata = {};
    if (!m) return out;
    for (const k of ['user_firstname', 'user_timezone', 'user_country', 'user_region', 'user_city'] as const) {
      const v = m[k];
      if (typeof v === 'string' && v.trim()) out[k] = v;
    }
    return out;
  });

const ts = z
  .number({ error: 'ts must be a number of seconds since the Unix epoch' })
  .refine(isValidTs, { error: 'ts must be seconds (or milliseconds) since the Unix epoch' })
  .nullish();

const contextEntrySchema = z.object({
  type: z.enum(['Human', 'AI', 'Instruction'], { error: "type must be one of 'Human', 'AI', 'Instruction'" }),
  text: z.string({ error: 'text must be a string' }),
  ts,
});

export const seed = z
  .number({ error: 'seed must be an integer' })
  .int({ error: 'seed must be an integer' })
  .min(Number.MIN_SAFE_INTEGER)
  .max(Number.MAX_SAFE_INTEGER)
  .nullish();

/** The spec's body: POST /external/api/inference and /external/api/inference/streaming. */
export const inferenceBodySchema = z
  .object({
    context: z.array(contextEntrySchema, { error: 'context must be a list of context entries' }).min(1, {
      error: 'context must hold at least one entry',
    }),
    config: z.enum(MODEL_CONFIGS, { error: `config must be one of ${MODEL_CONFIGS.map((m) => `'${m}'`).join(', ')}` }),
    temperature: unit('temperature', DEFAULTS.temperature),
    top_p: unit('top_p', DEFAULTS.topP),
    max_tokens: maxTokens.nullish().transform((v) => v ?? DEFAULTS.maxTokens),
    stop_tokens: stopList.nullish(),
    web_search: z.boolean({ error: 'web_search must be true or false' }).nullish(),
    metadata: metadataSchema,
    seed,
  })
  .transform((b): InferenceRequest => ({
    config: b.config,
    context: b.context.map((e) => ({
      type: e.type,
      text: e.text,
      ...(e.ts !== null && e.ts !== undefined ? { tsMs: tsToMillis(e.ts) } : {}),
    })),
    temperature: b.temperature,
    topP: b.top_p,
    maxTokens: b.max_tokens,
    stop: (b.stop_tokens ?? []).filter((s) => s.length > 0),
    webSearch: b.web_search ?? DEFAULTS.webSearch,
    metadata: b.metadata,
    ...(b.seed !== null && b.seed !== undefined ? { seed: b.seed } : {}),
  }));

const TEXT_ONLY = 'only text content parts are supported';

/** Content of an OpenAI message: a string, or text parts. */
const content = z.union([
  z.string(),
  z.array(
    z
      .object({
        type: z.string({ error: 'a content part needs a type' }),
        text: z.string({ error: 'a text part needs a text string' }).optional(),
      })
      .superRefine((p, ctx) => {
        if (p.type !== 'text') ctx.addIssue({ code: 'custom', path: ['type'], message: `${TEXT_ONLY} (got "${p.type.slice(0, 40)}")` });
        else if (p.text === undefined) ctx.addIssue({ code: 'custom', path: ['text'], message: 'a text part needs a text string' });
      })
      .transform((p) => ({ type: 'text' as const, text: p.text ?? '' })),
  ),
]);

/**
 * OpenAI features this service does not offer. Accepting and ignoring them makes agent frameworks
 * fail later and obscurely, so they are refused up front with 400 naming the feature (as OpenAI
 * refuses a feature a model lacks). Returns the refusal, or null.
 */
export function unsupportedChatFeature(body: unknown): string | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  const nonEmpty = (v: unknown) => (Array.isArray(v) ? v.length > 0 : v !== undefined && v !== null);
  if (nonEmpty(b.tools) || nonEmpty(b.functions)) {
    return 'tools are not supported: this service generates text only and never calls tools or functions; send the request without "tools"';
  }
  const choice = b.tool_choice ?? b.function_call;
  if (choice !== undefined && choice !== null && choice !== 'none' && choice !== 'auto') {
    return 'tools are not supported: "tool_choice" may only be "none" or "auto"';
  }
  const format = b.response_format as { type?: unknown } | null | undefined;
  if (format !== undefined && format !== null && !(typeof format === 'object' && format.type === 'text')) {
    const kind = typeof format === 'object' && typeof format.type === 'string' ? format.type.slice(0, 40) : String(format).slice(0, 40);
    return `response_format "${kind}" is not supported: replies are free text (ask for JSON in the prompt; the service_3_productivity model follows such instructions)`;
  }
  if (Array.isArray(b.messages)) {
    for (const m of b.messages as Array<{ content?: unknown }>) {
      if (!Array.isArray(m?.content)) continue;
      const other = (m.content as Array<{ type?: unknown }>).find(
        (p) => p && typeof p === 'object' && p.type !== 'text' && typeof p.type === 'string',
      );
      if (other) return `${TEXT_ONLY}: this service reads text only (got a "${String(other.type).slice(0, 40)}" part)`;
    }
  }
  return null;
}

const ROLE_TO_TYPE = { system: 'Instruction', developer: 'Instruction', user: 'Human', assistant: 'AI' } as const;

/**
 * POST /external/api/inference/openai/v1/chat/completions. `model` may be a config name
 * (MODEL_CONFIGS); anything else is served by DEFAULT_MODEL.
 */
export const chatCompletionSchema = z
  .object({
    model: z.string().nullish(),
    messages: z
      .array(
        z.object({
          role: z.enum(['system', 'developer', 'user', 'assistant'], {
            error: "role must be one of 'system', 'developer', 'user', 'assistant'",
          }),
          content: content.nullish(),
        }),
        { error: 'messages must be a list of messages' },
      )
      .min(1, { error: 'messages must hold at least one message' }),
    temperature: unit('temperature', DEFAULTS.temperature),
    top_p: unit('top_p', DEFAULTS.topP),
    max_tokens: maxTokens.nullish(),
    max_completion_tokens: maxTokens.nullish(),
    stop: z.union([stopString, stopList]).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
    n: z.literal(1, { error: 'only n = 1 is supported' }).nullish(),
    seed,
    web_search: z.boolean({ error: 'web_search must be true or false' }).nullish(),
    /** The user_* fields of the spec's metadata, when present (other keys are ignored). */
    metadata: metadataSchema,
  })
  .transform((b) => {
    const request: InferenceRequest = {
      config: isModelConfig(b.model) ? b.model : DEFAULT_MODEL,
      context: b.messages.map((m) => ({
        type: ROLE_TO_TYPE[m.role],
        text: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text).join(''),
      })),
      temperature: b.temperature,
      topP: b.top_p,
      maxTokens: b.max_completion_tokens ?? b.max_tokens ?? DEFAULTS.maxTokens,
      stop: (typeof b.stop === 'string' ? [b.stop] : (b.stop ?? [])).filter((s) => s.length > 0),
      webSearch: b.web_search ?? DEFAULTS.webSearch,
      metadata: b.metadata,
      ...(b.seed !== null && b.seed !== undefined ? { seed: b.seed } : {}),
    };
    return { request, stream: b.stream === true, includeUsage: b.stream_options?.include_usage === true };
  });
