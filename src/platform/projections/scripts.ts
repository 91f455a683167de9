import type { Redis } from 'ioredis';

/** A Lua script bound to one connection; call it with its keys, then its arguments. */
export type Script = (...keysThenArgs: Array<string | number>) => Promise<unknown>;

/**
 * Registers `lua` on the connection under `name` (ioredis defineCommand): it is sent as EVALSHA
 * (the 40-character digest) and only falls back to the full text once, after a NOSCRIPT.
 */
export function defineScript(redis: Redis, name: string, numberOfKeys: number, lua: string): Script {
  const commands = redis as unknown as Record<string, Script | undefined>;
  if (typeof commands[name] !== 'function') redis.defineCommand(name, { numberOfKeys, lua });
  const call = commands[name] as Script;
  return (...args) => call.apply(redis, args);
}
