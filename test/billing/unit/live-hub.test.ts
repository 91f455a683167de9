import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { LiveUsageHub } from '../../../src/billing/projections/usage/live-hub';

/**
 * A subscriber connection that behaves as ioredis does when Redis sends an SSUBSCRIBE confirmation and
 * a message in one read: the confirmation resolves `subscribe` and the message is emitted in the
 * same tick, before any `await ssubscribe(...)` resumes.
 */
class SameReadSubscriber extends EventEmitter {
  subscribed: string[] = [];
  ssubscribe(channel: string): Promise<number> {
    return new Promise((resolve) =>
      setImmediate(() => {
        this.subscribed.push(channel);
        resolve(1);
        this.emit('smessage', channel, `first on ${channel}`);
      }),
    );
  }
  sunsubscribe(): Promise<number> {
    return Promise.resolve(0);
  }
}

describe('LiveUsageHub', () => {
  it('delivers a message that arrives in the same read as the subscription confirmation', async () => {
    const sub = new SameReadSubscriber();
    const hub = new LiveUsageHub(
      async () => sub as unknown as Redis,
      (ws) => `live:${ws}`,
    );
    const got: string[] = [];
    await hub.listen('ws1', (m) => got.push(m));
    expect(sub.subscribed).toEqual(['live:ws1']);
    expect(got).toEqual(['first on live:ws1']);
  });

  it('lets a second listener of a channel whose SUBSCRIBE is in flight wait for it, and subscribes once', async () => {
    const sub = new SameReadSubscriber();
    const hub = new LiveUsageHub(
      async () => sub as unknown as Redis,
      (ws) => `live:${ws}`,
    );
    const a: string[] = [];
    const b: string[] = [];
    await Promise.all([hub.listen('ws1', (m) => a.push(m)), hub.listen('ws1', (m) => b.push(m))]);
    expect(sub.subscribed).toEqual(['live:ws1']);
    expect(a).toEqual(['first on live:ws1']);
    expect(b).toEqual(['first on live:ws1']);
  });
});
