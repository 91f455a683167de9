/**
 * The model configs a caller can ask for: the one list every other place derives from (the
 * request schemas, the OpenAI-compatible model list, the portal's config and playground, the
 * OpenAPI document). Add a config here and the type checker names every place that must learn it.
 */
export const MODEL_CONFIGS = ['service_3_pi', 'service_3_productivity'] as const;

export type ModelConfig = (typeof MODEL_CONFIGS)[number];

/** What the OpenAI-compatible route serves when `model` names no config. */
export const DEFAULT_MODEL: ModelConfig = 'service_3_pi';

/** One line per config, for pickers and reference pages. */
export const MODEL_SUMMARIES: Record<ModelConfig, string> = {
  service_3_pi: 'conversational',
  service_3_productivity: 'instruction following',
};

export function isModelConfig(v: unknown): v is ModelConfig {
  return typeof v === 'string' && (MODEL_CONFIGS as readonly string[]).includes(v);
}
