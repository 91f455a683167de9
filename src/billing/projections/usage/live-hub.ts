import type { Redis } from 'ioredis';
import { accessEndedMessage } from './access-ended';

/**
 * The reading side of the usage projection's live channel (`liveChannel`): one Redis subscriber
 * connection per process, opened on the first listener and fanned out to every listener of a
 * workspace (the /usage/live SSE clients). Built once per process in buildServices (`s.liveUsage`).
 * Sharded pub/sub (SSUBSCRIBE, SPUBLISH: Redis 7), a channel per workspace: on a Redis Cluster the
 * workspace's node serves it (ioredis's `shardedSubscribers`), on one Redis it is the same.
 */
export class LiveUsageHub {
  private sub: Promise<Redis> | null = null;
  /** Per channel: its listeners, and the SUBSCRIBE they wait for. */
  private readonly channels = new Map<string, { fns: Set<(msg: string) => void>; ready: Promise<void> }>();

  constructor(
    /** Opens the subscriber connection (closed with the services). */
    private readonly connect: () => Promise<Redis>,
    /** The channel a workspace's debits are published on. */
    private readonly channelOf: (workspaceId: string) => string,
    /** A connection to publish on (the service's shared one). */
    private readonly publisher?: Redis,
  ) {}

  /**
   * Ends a session's live streams of these workspaces (a logout): the marker is published before
   * this resolves, so it reaches every stream ahead of any debit projected afterwards.
   */
  async endSession(workspaceIds: readonly string[], userId: string, sessionHash: string): Promise<void> {
    if (!this.publisher || workspaceIds.length === 0) return;
    const msg = accessEndedMessage({ userId, reason: 'logged_out', session: sessionHash });
    // One command each, not a pipeline: on a Redis Cluster the workspaces' channels are on different nodes.
    const publisher = this.publisher;
    await Promise.all(workspaceIds.map((ws) => publisher.spublish(this.channelOf(ws), msg)));
  }

  private connection(): Promise<Redis> {
    if (!this.sub) {
      this.sub = this.connect().then((r) => {
        r.on('smessage', (channel: string, msg: string) => {
          for (const fn of this.channels.get(channel)?.fns ?? []) fn(msg);
        });
        return r;
      });
      this.sub.catch(() => (this.sub = null));
    }
    return this.sub;
  }

  /**
   * Calls `fn` with each debit published for the workspace, from the moment this resolves: it
   * resolves once Redis has confirmed the subscription. `fn` is registered before the SUBSCRIBE is
   * sent, because Redis may deliver a message in the same read as its confirmation, before an
   * `await` here would resume. The returned function stops it.
   */
  async listen(workspaceId: string, fn: (msg: string) => void): Promise<() => void> {
    const channel = this.channelOf(workspaceId);
    const r = await this.connection();
    let c = this.channels.get(channel);
    if (!c) {
      const entry = { fns: new Set<(msg: string) => void>(), ready: r.ssubscribe(channel).then(() => undefined) };
      entry.ready.catch(() => {
        if (this.channels.get(channel) === entry) this.channels.delete(channel);
      });
      this.channels.set(channel, (c = entry));
    }
    const entry = c;
    entry.fns.add(fn);
    const stop = () => {
      if (!entry.fns.delete(fn) || entry.fns.size > 0 || this.channels.get(channel) !== entry) return;
      this.channels.delete(channel);
      void r.sunsubscribe(channel).catch(() => undefined);
    };
    try {
      await entry.ready;
    } catch (err) {
      stop();
      throw err;
    }
    return stop;
  }
}
