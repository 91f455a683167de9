import { z } from 'zod';

/**
 * The two error bodies every route answers with (src/platform/http/middleware/errors.ts), defined once: the
 * OpenAPI document references them from every error response that gives no schema of its own.
 * Loose: a few errors add a field beside `detail` (a running rebuild's progress, OpenAI's `error`).
 */

export const errorBody = z
  .looseObject({ detail: z.string().describe('What went wrong, in words meant for the caller') })
  .meta({ id: 'Error', description: 'Every error but a validation error: `{"detail": "…"}`.' });

export const validationIssue = z
  .object({
    loc: z.array(z.union([z.string(), z.number().int()])).describe('Where: "body", "query" or "path", then the field path'),
    msg: z.string(),
    type: z.string(),
  })
  .meta({ id: 'ValidationIssue' });

export const validationErrorBody = z
  .looseObject({ detail: z.array(validationIssue) })
  .meta({ id: 'ValidationError', description: "A value the contract refuses (422), in FastAPI's list format." });
