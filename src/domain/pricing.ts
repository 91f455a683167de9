import type { NanoUsd } from './money';

/** Per-token prices in nano-USD. They come from configuration and are written into every debit. */
export interface Prices {
  inputNanoUsdPerToken: NanoUsd;
  outputNanoUsdPerToken: NanoUsd;
}

export function cost(prices: Prices, inputTokens: number, outputTokens: number): NanoUsd {
  return BigInt(inputTokens) * prices.inputNanoUsdPerToken + BigInt(outputTokens) * prices.outputNanoUsdPerToken;
}

/** The most a request can cost: its prompt plus max_tokens of output. Reserved before generating. */
export function maxCost(prices: Prices, promptTokens: number, maxTokens: number): NanoUsd {
  return cost(prices, promptTokens, maxTokens);
}
