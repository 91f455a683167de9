import { Router } from 'express';
import type { Queue } from 'bullmq';
import type { z } from 'zod';
import { metaOf, requireMember, requireSession, userOf, workspaceOf } from '../../accounts/routes';
import type { Validated } from '../../platform/http/contract';
import { mount } from '../../platform/http/mount';
import { HttpError } from '../../platform/http/middleware/errors';
import type { Services } from '../../services';
import { getDelivery, listDeliveries as deliveriesOf, type Delivery } from '../deliveries';
import type { Endpoint } from '../endpoints';
import { getReplay, listReplays, type Replay } from '../replays';
import { webhookEventTypes } from '../event-types';
import * as uc from '../usecases';
import { deliveryJobId, type WebhookJobData } from '../workers/delivery/queue';
import * as c from './webhook-schemas';

/**
 * /v1/workspaces/:ws/webhooks…: admins register endpoints, rotate secrets, enable disabled ones, set the
 * low-balance threshold, list and resend deliveries, and replay from a point in time.
 */

const endpointJson = (e: Endpoint): z.input<typeof c.endpointBody> => ({
  endpointId: e.endpointId,
  url: e.url,
  eventTypes: e.eventTypes,
  status: e.status,
  disabledReason: e.disabledReason,
  created: e.created,
});

const deliveryJson = (d: Delivery): z.input<typeof c.deliveryBody> => ({
  deliveryId: d.deliveryId,
  eventType: d.eventType,
  status: d.status,
  attempts: d.attempts,
  created: d.created,
  payload: d.payload,
  ...(d.position ? { position: d.position } : {}),
});

const replayJson = (r: Replay): z.input<typeof c.replayBody> => ({
  replayId: r.replayId,
  since: r.since,
  fromPosition: r.fromPosition,
  toPosition: r.toPosition,
  status: r.status,
  matched: r.matched,
  succeeded: r.succeeded,
  failed: r.failed,
  created: r.created,
});

export function webhookRoutes(s: Services, queue: () => Promise<Queue<WebhookJobData>>): Router {
  const r = Router();
  const session = requireSession(s);
  const admin = requireMember(s, { admin: true });

  /**
   * A GET of what one endpoint holds (its deliveries, its replays): 404 unless the endpoint in the path
   * is the workspace's, and never cached (attempts and replay progress change from one second to the next).
   */
  const readUnderEndpoint = <C extends typeof c.listDeliveries | typeof c.listReplays | typeof c.getReplay>(
    contract: C,
    read: (params: Validated<C>['params']) => Promise<object>,
  ) =>
    mount(r, contract, session, admin, async (_req, res, { params }) => {
      await uc.requireEndpoint(s, workspaceOf(res).workspaceId, params.endpointId);
      res.set('Cache-Control', 'no-store').json(await read(params));
    });

  mount(r, c.registerEndpoint, session, admin, async (_req, res, { body }) => {
    const ws = workspaceOf(res).workspaceId;
    const { endpointId, secret } = await uc.registerEndpoint(s, {
      workspaceId: ws,
      url: body.url,
      eventTypes: body.eventTypes,
      by: userOf(res).userId,
      metadata: metaOf(res),
    });
    const ep = await uc.requireEndpoint(s, ws, endpointId);
    res.status(201).json({ ...endpointJson(ep), secret } satisfies z.input<typeof c.endpointWithSecretBody>);
  });

  mount(r, c.listEndpoints, session, admin, async (_req, res) => {
    const eps = await uc.listEndpoints(s, workspaceOf(res).workspaceId);
    const balanceThreshold = await uc.balanceThresholdOf(s, workspaceOf(res).workspaceId);
    res.set('Cache-Control', 'no-store').json({ endpoints: eps.map(endpointJson), eventTypes: webhookEventTypes, balanceThreshold });
  });

  mount(r, c.deleteEndpoint, session, admin, async (_req, res, { params: { endpointId } }) => {
    await uc.deleteEndpoint(s, { workspaceId: workspaceOf(res).workspaceId, endpointId, by: userOf(res).userId, metadata: metaOf(res) });
    res.status(204).end();
  });

  mount(r, c.rotateSecret, session, admin, async (_req, res, { params: { endpointId } }) => {
    const ws = workspaceOf(res).workspaceId;
    const { secret } = await uc.rotateEndpointSecret(s, { workspaceId: ws, endpointId, by: userOf(res).userId, metadata: metaOf(res) });
    res.json({ ...endpointJson(await uc.requireEndpoint(s, ws, endpointId)), secret });
  });

  readUnderEndpoint(c.listDeliveries, async ({ endpointId }) => ({
    deliveries: (await deliveriesOf(s.redis, s.ks, endpointId)).map(deliveryJson),
  }));

  mount(r, c.resendDelivery, session, admin, async (_req, res, { params: { endpointId, deliveryId } }) => {
    const ws = workspaceOf(res).workspaceId;
    const ep = await uc.requireEndpoint(s, ws, endpointId);
    if (ep.status !== 'enabled') throw new HttpError(409, 'The endpoint is disabled');
    const d = await getDelivery(s.redis, s.ks, endpointId, deliveryId);
    if (!d) throw new HttpError(404, 'No delivery with this id');
    // Keyed by the attempts made so far: a double click queues one resend.
    const n = d.attempts.length;
    await (
      await queue()
    ).add('deliver', { workspaceId: ws, endpointId, eventId: deliveryId, resend: n }, { jobId: deliveryJobId(endpointId, deliveryId, n) });
    res.status(202).json(deliveryJson(d));
  });

  mount(r, c.setBalanceThreshold, session, admin, async (_req, res, { body }) => {
    res.json(
      await uc.setBalanceThreshold(s, {
        workspaceId: workspaceOf(res).workspaceId,
        threshold: body.threshold,
        by: userOf(res).userId,
        metadata: metaOf(res),
      }),
    );
  });

  mount(r, c.enableEndpoint, session, admin, async (_req, res, { params: { endpointId } }) => {
    const ws = workspaceOf(res).workspaceId;
    await uc.enableEndpoint(s, { workspaceId: ws, endpointId, by: userOf(res).userId, metadata: metaOf(res) });
    res.json(endpointJson(await uc.requireEndpoint(s, ws, endpointId)));
  });

  mount(r, c.startReplay, session, admin, async (_req, res, { params, body }) => {
    const { replay, created } = await uc.startReplay(s, queue, {
      workspaceId: workspaceOf(res).workspaceId,
      endpointId: params.endpointId,
      ...body,
      by: userOf(res).userId,
      metadata: metaOf(res),
    });
    res.status(created ? 202 : 200).json(replayJson(replay));
  });

  readUnderEndpoint(c.listReplays, async ({ endpointId }) => ({ replays: (await listReplays(s.redis, s.ks, endpointId)).map(replayJson) }));

  readUnderEndpoint(c.getReplay, async ({ endpointId, replayId }) => {
    const replay = await getReplay(s.redis, s.ks, replayId);
    if (!replay || replay.endpointId !== endpointId) throw new HttpError(404, 'No replay with this id');
    return replayJson(replay);
  });

  return r;
}
