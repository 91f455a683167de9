import { randomUUID } from 'node:crypto';
import { tokenCost } from '../../src/inference/metering';
import { streams } from '../../src/platform/streams';
import type { Services } from '../../src/services';

/** The per-token prices the test debits are written at (the service's defaults). */
export const TEST_PRICES = { inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n };

export interface DebitFacts {
  requestId?: string;
  /** Default 'key-1'. */
  keyId?: string;
  /** Default 'service_3_pi'. */
  config?: string;
  /** Default 1 each. */
  inputTokens?: number;
  outputTokens?: number;
  /** Default: the tokens at TEST_PRICES. */
  amountNanoUsd?: bigint;
}

/** The data of a TokensDebited as the inference engine writes it. */
export function debitData(workspaceId: string, f: DebitFacts = {}) {
  const inputTokens = f.inputTokens ?? 1;
  const outputTokens = f.outputTokens ?? 1;
  return {
    requestId: f.requestId ?? randomUUID(),
    workspaceId,
    keyId: f.keyId ?? 'key-1',
    config: f.config ?? 'service_3_pi',
    inputTokens,
    outputTokens,
    inputPriceNanoUsd: TEST_PRICES.inputNanoUsdPerToken.toString(),
    outputPriceNanoUsd: TEST_PRICES.outputNanoUsdPerToken.toString(),
    amountNanoUsd: (f.amountNanoUsd ?? tokenCost(TEST_PRICES, inputTokens, outputTokens)).toString(),
  };
}

/**
 * Appends one request's TokensDebited to its own inference stream, without the engine, and waits
 * (up to 5 s) until the service's projections applied it. Returns the requestId.
 */
export async function debit(s: Pick<Services, 'store' | 'progress'>, workspaceId: string, f: DebitFacts = {}): Promise<string> {
  const data = debitData(workspaceId, f);
  const r = await s.store.append(streams.inference(data.requestId), [{ id: randomUUID(), type: 'TokensDebited', data }], {
    expectedRevision: 'no_stream',
  });
  await s.progress.waitFor(r.position, 5000);
  return data.requestId;
}
