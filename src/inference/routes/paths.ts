/** Where the inference routes live (the spec fixes the first two). */
export const PATHS = {
  inference: '/external/api/inference',
  streaming: '/external/api/inference/streaming',
  openai: '/external/api/inference/openai',
  chat: '/external/api/inference/openai/v1/chat/completions',
  models: '/external/api/inference/openai/v1/models',
  responses: '/external/api/inference/openai/v1/responses',
} as const;
