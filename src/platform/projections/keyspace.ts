/**
 * Where everything lives in Redis. Every key starts with the configured prefix (REDIS_PREFIX), so
 * tests and a live service can share one Redis. Read models live in generations: a rebuild fills a
 * fresh generation and then moves the `active` pointer, so readers never see a half-built model.
 *
 * Keys carry hash tags (the text between the first `{` and the next `}`: what Redis Cluster hashes
 * to pick a slot), so that every key one command, script or MULTI touches is in one slot:
 *
 * - `{ws:<id>}` (wsTag): every key of one workspace's read models and request state (balance,
 *   spend, budgets, reservations, rate-limit counters). A request's admission and a projection
 *   batch's writes for one workspace run on that slot.
 * - `{<name>}` (homeTag): a projection's own keys: its pointers, checkpoints, and the keys of its
 *   read model that are not per workspace (users, the key index by secret hash).
 *
 *   {prefix}proj:{<name>}:active             active generation of a projection (absent = 0)
 *   {prefix}proj:{<name>}:gen                generation counter
 *   {prefix}proj:{<name>}:ready              set once the live runner caught up (gone after a Redis loss)
 *   {prefix}proj:{<name>}:rebuild            the running rebuild's lock: token (its generation) + progress
 *   {prefix}proj:{<name>}:building           generations a rebuild is filling (removed if it dies)
 *   {prefix}proj:{<name>}:pending            a finished generation the live runner is to switch to
 *   {prefix}rm:{<name>}:<gen>:__checkpoint   last global position applied to that generation
 *   {prefix}rm:{<name>}:<gen>:<...>          the read model's keys that are not per workspace
 *   {prefix}rm:<name>:<gen>:{ws:<id>}[:<...>] the read model's keys of one workspace
 *   {prefix}proj:commit-guard                never holds a value: a runner's batch check writes it to abort its own MULTI
 *   {prefix}<name>:{ws:<id>}[:<...>]         a workspace's keys outside generations (reservations, rate-limit counters)
 *   {prefix}<...>                            other shared keys outside generations (channels)
 *
 * REDIS_PREFIX may not contain braces (src/platform/config.ts), so the first `{` of a key is its tag's.
 */

/** The hash tag of every key one workspace's request or projection batch touches. */
export function wsTag(workspaceId: string): string {
  return `{ws:${workspaceId}}`;
}

/** The hash tag of a projection's own keys (pointers, checkpoints, read-model keys not per workspace). */
export function homeTag(name: string): string {
  return `{${name}}`;
}

/** `parts` after a key's head, each after a ':' (nothing when there are none). */
function tail(parts: readonly string[]): string {
  return parts.length ? ':' + parts.join(':') : '';
}

export class Keyspace {
  constructor(readonly prefix: string) {}

  active(name: string): string {
    return `${this.prefix}proj:${homeTag(name)}:active`;
  }

  genCounter(name: string): string {
    return `${this.prefix}proj:${homeTag(name)}:gen`;
  }

  /** Exists while the live runner has caught this projection up since Redis last lost its data. */
  ready(name: string): string {
    return `${this.prefix}proj:${homeTag(name)}:ready`;
  }

  rebuildLock(name: string): string {
    return `${this.prefix}proj:${homeTag(name)}:rebuild`;
  }

  /** A finished rebuild's generation, waiting for the live runner to switch to it. */
  pending(name: string): string {
    return `${this.prefix}proj:${homeTag(name)}:pending`;
  }

  building(name: string): string {
    return `${this.prefix}proj:${homeTag(name)}:building`;
  }

  /** Pub/sub channel on which a rebuild announces a switch-over, so live runners catch up at once. */
  get switchChannel(): string {
    return `${this.prefix}proj:switched`;
  }

  /** The prefix of a generation's keys that are not per workspace (and of its checkpoint). */
  genPrefix(name: string, gen: string): string {
    return `${this.prefix}rm:${homeTag(name)}:${gen}:`;
  }

  /** The prefix of a generation's per-workspace keys: `{ws:` follows (SCAN patterns). */
  wsGenPrefix(name: string, gen: string): string {
    return `${this.prefix}rm:${name}:${gen}:`;
  }

  checkpoint(name: string, gen: string): string {
    return `${this.genPrefix(name, gen)}__checkpoint`;
  }

  rm(name: string, gen: string, ...parts: string[]): string {
    return this.genPrefix(name, gen) + parts.join(':');
  }

  /** A key of one workspace in a generation: `rm:<name>:<gen>:{ws:<id>}[:parts]`. */
  rmWs(name: string, gen: string, workspaceId: string, ...parts: string[]): string {
    return this.wsGenPrefix(name, gen) + wsTag(workspaceId) + tail(parts);
  }

  shared(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /** A key of one workspace outside generations: `<name>:{ws:<id>}[:parts]`. */
  sharedWs(workspaceId: string, name: string, ...parts: string[]): string {
    return `${this.prefix}${name}:${wsTag(workspaceId)}${tail(parts)}`;
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
