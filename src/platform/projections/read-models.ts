import type { ChainableCommander, Redis } from 'ioredis';
import { Keyspace } from './keyspace';

/** Builds a key in one generation of a read model. */
export type KeyFn = (...parts: string[]) => string;

/** How many times `read` follows a generation that moved under it before it gives up. */
const SWITCHES_FOLLOWED = 5;

/** Resolves a projection's active generation for queries. */
export class ReadModels {
  /** The generation each read model was last read in (`read` assumes it, and checks it). */
  private readonly seen = new Map<string, string>();

  constructor(
    readonly redis: Redis,
    readonly ks: Keyspace,
  ) {}

  async gen(name: string): Promise<string> {
    return (await this.redis.get(this.ks.active(name))) ?? '0';
  }

  /** A function that builds keys in the active generation of `name`. */
  async keys(name: string): Promise<KeyFn> {
    const gen = await this.gen(name);
    return (...parts: string[]) => this.ks.rm(name, gen, ...parts);
  }

  /**
   * Reads in the active generation of `name` in one round trip where `keys` and a read take two:
   * the reads are made in the generation seen last, in one MULTI with the `active` pointer; if a
   * rebuild switched the pointer since, they are made again in the new generation. What it returns
   * is read atomically with the pointer, so never from a generation that was not active. Each
   * debit's reactions (auto-reload, budget and balance alerts) read this way. Returns the replies
   * of the commands `reads` queued, in order; a command's error is thrown.
   */
  async read(name: string, reads: (tx: ChainableCommander, k: KeyFn) => unknown): Promise<unknown[]> {
    let gen = this.seen.get(name) ?? (await this.gen(name));
    for (let i = 0; ; i++) {
      const g = gen;
      const tx = this.redis.multi().get(this.ks.active(name));
      reads(tx, (...parts: string[]) => this.ks.rm(name, g, ...parts));
      const res = (await tx.exec()) ?? [];
      for (const [err] of res) if (err) throw err;
      const active = (res[0]?.[1] as string | null) ?? '0';
      if (active === g) {
        this.seen.set(name, g);
        return res.slice(1).map((r) => r[1]);
      }
      if (i >= SWITCHES_FOLLOWED) throw new Error(`read model ${name}: its generation kept switching (last ${active})`);
      gen = active;
    }
  }
}
