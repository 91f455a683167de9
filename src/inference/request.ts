import type { ModelConfig } from './events';

/** What every inference route (spec or OpenAI-compatible) is normalized to after validation. */

export type EntryType = 'Human' | 'AI' | 'Instruction';

export interface ContextEntry {
  type: EntryType;
  text: string;
  /** Milliseconds since the epoch (already read from seconds or milliseconds), if given. */
  tsMs?: number;
}

export interface UserMetadata {
  user_firstname?: string;
  /** A canonical IANA time-zone name (validated). */
  user_timezone?: string;
  user_country?: string;
  user_region?: string;
  user_city?: string;
}

export interface InferenceRequest {
  config: ModelConfig;
  context: ContextEntry[];
  temperature: number;
  topP: number;
  maxTokens: number;
  /** Non-empty stop strings. */
  stop: string[];
  webSearch: boolean;
  metadata: UserMetadata;
  /** Sampling seed; the request id is used when absent. */
  seed?: number;
}

export const DEFAULTS = { temperature: 1, topP: 0.95, maxTokens: 256, webSearch: true } as const;
export const LIMITS = {
  maxTokens: 1024,
  stopStrings: 32,
  stopStringLength: 256,
  metadataLength: 256,
} as const;
