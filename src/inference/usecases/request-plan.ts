import type { TightestLeft } from '../../billing';
import type { KeyRecord } from '../../accounts';
import type { EventMetadata } from '../../platform/eventstore/port';
import type { NanoUsd } from '../../platform/money';
import type { Endpoint } from '../events';
import type { GenerationResult } from '../generate';
import type { RequestFacts } from '../metering';
import type { RenderedPrompt } from '../prompt';
import type { InferenceRequest } from '../request';

/** What the engine works with between its steps: the plan before admission, the prepared request, the result. */
/** A request's prompt, rendered at `now`. */
export interface Rendered {
  request: InferenceRequest;
  now: Date;
  prompt: RenderedPrompt;
}

/** A request planned before admission: its prompt, exact token count and the amount to hold. */
export interface Plan extends Rendered {
  promptTokens: number;
  reserved: NanoUsd;
  /** The request asks for web search and the prompt needs it: the amount is known only after the search. */
  search: boolean;
  searched?: boolean;
}

export interface PrepareInput {
  requestId: string;
  key: KeyRecord;
  endpoint: Endpoint;
  request: InferenceRequest;
  clientRequestId?: string;
}

export interface Prepared {
  facts: RequestFacts;
  request: InferenceRequest;
  prompt: RenderedPrompt;
  reserved: NanoUsd;
  startedMs: number;
  metadata: EventMetadata;
  searched: boolean;
  /** InferenceRequested's append, started by `record`: resolves once it landed, rejects (hold released) if it failed. */
  committed: Promise<void>;
  /** The layer with the least left once this request was held, as the reserve script found it (the remaining-budget header). */
  tightest?: TightestLeft;
}

export interface Executed {
  result: GenerationResult;
  inputTokens: number;
  outputTokens: number;
  /** The amount of the TokensDebited this outcome is recorded with (what the caller is told it cost). */
  costNanoUsd: NanoUsd;
  /** False when InferenceCompleted + TokensDebited could not be written (store down). */
  recorded: boolean;
}
