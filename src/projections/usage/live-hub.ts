import type { Redis } from 'ioredis';

/**
 * The reading side of the usage projection's live channel (`liveChannel`): one Redis subscriber
 * connection per process, opened on the first listener and fanned out to every listener of a
 * workspace (the /usage/live SSE clients). Built once per process in buildServices (`s.liveUsage`).
 */
export class LiveUsageHub {
  private sub: Promise<Redis> | null = null;
  private readonly listeners = new Map<string, Set<(msg: string) => void>>();

  constructor(
    /** Opens the subscriber connection (closed with the services). */
    private readonly connect: () => Promise<Redis>,
    /** The channel a workspace's debits are published on. */
    private readonly channelOf: (workspaceId: string) => string,
  ) {}

  private connection(): Promise<Redis> {
    if (!this.sub) {
      this.sub = this.connect().then((r) => {
        r.on('message', (channel: string, msg: string) => {
          for (const fn of this.listeners.get(channel) ?? []) fn(msg);
        });
        return r;
      });
      this.sub.catch(() => (this.sub = null));
    }
    return this.sub;
  }

  /** Calls `fn` with each debit published for the workspace; the returned function stops it. */
  async listen(workspaceId: string, fn: (msg: string) => void): Promise<() => void> {
    const channel = this.channelOf(workspaceId);
    const r = await this.connection();
    let set = this.listeners.get(channel);
    if (!set) {
      this.listeners.set(channel, (set = new Set()));
      await r.subscribe(channel);
    }
    set.add(fn);
    return () => {
      set!.delete(fn);
      if (set!.size === 0) {
        this.listeners.delete(channel);
        void r.unsubscribe(channel).catch(() => undefined);
      }
    };
  }
}
