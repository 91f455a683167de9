/**
 * Where everything lives in Redis. Every key starts with the configured prefix (REDIS_PREFIX), so
 * tests and a live service can share one Redis. Read models live in generations: a rebuild fills a
 * fresh generation and then moves the `active` pointer, so readers never see a half-built model.
 *
 *   {prefix}proj:{name}:active              active generation of a projection (absent = 0)
 *   {prefix}proj:{name}:gen                 generation counter
 *   {prefix}proj:{name}:ready               set once the live runner caught up (gone after a Redis loss)
 *   {prefix}proj:{name}:rebuild             the running rebuild's lock: token (its generation) + progress
 *   {prefix}proj:{name}:building            generations a rebuild is filling (removed if it dies)
 *   {prefix}proj:{name}:pending             a finished generation the live runner is to switch to
 *   {prefix}rm:{name}:{gen}:__checkpoint    last global position applied to that generation
 *   {prefix}rm:{name}:{gen}:{...}           the read model's own keys
 *   {prefix}proj:commit-guard               never holds a value: a runner's batch check writes it to abort its own MULTI
 *   {prefix}{...}                           shared keys outside generations (reservations, channels)
 */
export class Keyspace {
  constructor(readonly prefix: string) {}

  active(name: string): string {
    return `${this.prefix}proj:${name}:active`;
  }

  genCounter(name: string): string {
    return `${this.prefix}proj:${name}:gen`;
  }

  /** Exists while the live runner has caught this projection up since Redis last lost its data. */
  ready(name: string): string {
    return `${this.prefix}proj:${name}:ready`;
  }

  rebuildLock(name: string): string {
    return `${this.prefix}proj:${name}:rebuild`;
  }

  /** A finished rebuild's generation, waiting for the live runner to switch to it. */
  pending(name: string): string {
    return `${this.prefix}proj:${name}:pending`;
  }

  building(name: string): string {
    return `${this.prefix}proj:${name}:building`;
  }

  /** Pub/sub channel on which a rebuild announces a switch-over, so live runners catch up at once. */
  get switchChannel(): string {
    return `${this.prefix}proj:switched`;
  }

  genPrefix(name: string, gen: string): string {
    return `${this.prefix}rm:${name}:${gen}:`;
  }

  checkpoint(name: string, gen: string): string {
    return `${this.genPrefix(name, gen)}__checkpoint`;
  }

  rm(name: string, gen: string, ...parts: string[]): string {
    return this.genPrefix(name, gen) + parts.join(':');
  }

  shared(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /** Pub/sub channel on which the runner announces the position every projection has reached. */
  get progressChannel(): string {
    return `${this.prefix}proj:progress`;
  }

  /**
   * WATCHed with every batch and written (then deleted, in the same script) only by a batch check
   * that failed: writing a watched key is how a script aborts the MULTI queued after it
   * (switch-over.ts guardBatch).
   */
  get commitGuard(): string {
    return `${this.prefix}proj:commit-guard`;
  }

  reactorCheckpoint(name: string): string {
    return `${this.prefix}reactor:${name}:checkpoint`;
  }
}
