/** A domain event before it is stored: the command handler gives it an id and metadata. */
export interface Event<Type extends string = string, Data extends Record<string, unknown> = Record<string, unknown>> {
  type: Type;
  data: Data;
}

export interface Command<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/** Makes a switch exhaustive: the compiler complains when a case is missing. */
export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}
