import type { NanoUsd } from '../platform/money';

/** Per-token prices in nano-USD. They come from configuration and are written into every debit. */
export interface Prices {
  inputNanoUsdPerToken: NanoUsd;
  outputNanoUsdPerToken: NanoUsd;
}

/**
 * What `inputTokens` in and `outputTokens` out cost. A debit is the tokens billed; the reservation
 * held before generating is the most a request can cost: its prompt plus max_tokens of output.
 */
export function tokenCost(prices: Prices, inputTokens: number, outputTokens: number): NanoUsd {
  return BigInt(inputTokens) * prices.inputNanoUsdPerToken + BigInt(outputTokens) * prices.outputNanoUsdPerToken;
}
