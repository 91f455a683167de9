import type { Redis } from 'ioredis';
import { Keyspace } from './keyspace';

/** Resolves a projection's active generation for queries. */
export class ReadModels {
  constructor(
    readonly redis: Redis,
    readonly ks: Keyspace,
  ) {}

  async gen(name: string): Promise<string> {
    return (await this.redis.get(this.ks.active(name))) ?? '0';
  }

  /** A function that builds keys in the active generation of `name`. */
  async keys(name: string): Promise<(...parts: string[]) => string> {
    const gen = await this.gen(name);
    return (...parts: string[]) => this.ks.rm(name, gen, ...parts);
  }
}
