/**
 * An EventStoreDB stand-in that speaks the real gRPC protocol, built from the generated code that
 * ships in @eventstore/db-client. It serves the Streams service (Read, Append, BatchAppend) and the
 * server-features probe, so the REAL client runs against it over the wire: its encoding, error
 * mapping, deadlines, reconnection and leader redirection are all exercised. The write and read
 * rules live in ./log (see there for the server facts they encode).
 *
 * Read rules (Streams.Read, Enumerators): a missing stream answers StreamNotFound; $all forwards is
 * inclusive of its position, backwards exclusive; a position that is not the start of a record is
 * InvalidArgument ("Trying to read from an invalid position."); a subscription is confirmed FIRST,
 * then fails on such a position; it starts strictly after its position, catches up, sends CaughtUp,
 * then goes live.
 *
 * Faults: `kill()` drops every connection at once (forceShutdown) and `restart()` serves the same
 * log again on the same port; `role: 'follower'` answers NotLeader (with the leader's endpoint) to
 * calls that require the leader; `hangReads` accepts reads and never answers them; `stallWrites`
 * holds batch appends until the deadline the client sent with them, then answers Timeout (as the
 * server's write timeout does), writing nothing.
 */
import * as grpc from '@grpc/grpc-js';
import { Any } from 'google-protobuf/google/protobuf/any_pb';
import { Empty as PbEmpty } from 'google-protobuf/google/protobuf/empty_pb';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import {
  AllStreamPosition,
  Empty,
  StreamIdentifier,
  UUID,
  WrongExpectedVersion as PbWrongExpectedVersion,
} from '@eventstore/db-client/generated/shared_pb';
import { Status as PbStatus } from '@eventstore/db-client/generated/status_pb';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { AppendReq, AppendResp, BatchAppendReq, BatchAppendResp, ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb';
import { EsdbLog, Expected, LogRecord, Proposed, WriteOutcome } from './log';

export { EsdbLog } from './log';

export interface EsdbGrpcServerOptions {
  /** Shared storage (two servers on one log make a leader and a follower). Default: a new log. */
  log?: EsdbLog;
  /** 0: any free port. */
  port?: number;
  role?: 'leader' | 'follower';
  /** Where a follower sends the client for writes and leader reads. */
  leader?: { host: string; port: number };
}

type ServiceError = Partial<grpc.StatusObject>;

const INVALID_POSITION = 'Trying to read from an invalid position.';

function streamName(id: StreamIdentifier | undefined): string {
  return Buffer.from(id?.getStreamName_asU8() ?? new Uint8Array()).toString('utf8');
}

function identifier(name: string): StreamIdentifier {
  return new StreamIdentifier().setStreamName(Buffer.from(name, 'utf8'));
}

function toReadEvent(r: LogRecord): ReadResp {
  const rec = new ReadResp.ReadEvent.RecordedEvent()
    .setId(new UUID().setString(r.id))
    .setStreamIdentifier(identifier(r.streamId))
    .setStreamRevision(r.revision.toString())
    .setCommitPosition(r.position.toString())
    .setPreparePosition(r.position.toString())
    .setData(r.data)
    .setCustomMetadata(r.metadata);
  rec.getMetadataMap().set('type', r.type).set('content-type', r.contentType).set('created', r.created.toString());
  const ev = new ReadResp.ReadEvent().setEvent(rec).setCommitPosition(r.position.toString());
  return new ReadResp().setEvent(ev);
}

function proposed(m: AppendReq.ProposedMessage | BatchAppendReq.ProposedMessage): Proposed {
  const md = m.getMetadataMap();
  const type = md.get('type');
  const contentType = md.get('content-type');
  if (type === undefined || contentType === undefined) {
    throw {
      code: grpc.status.INVALID_ARGUMENT,
      details: `Required Metadata Property '${type === undefined ? 'type' : 'content-type'}' is missing`,
    };
  }
  return { id: m.getId()?.getString() ?? '', type, contentType, data: m.getData_asU8(), metadata: m.getCustomMetadata_asU8() };
}

/** The expected revision of an Append or BatchAppend request (the oneof is named differently in each). */
function expectedOf(revision: string | undefined, o: { hasNoStream(): boolean; hasStreamExists(): boolean }): Expected {
  if (revision !== undefined) return BigInt(revision);
  return o.hasNoStream() ? 'no_stream' : o.hasStreamExists() ? 'stream_exists' : 'any';
}

function notLeaderError(leader: { host: string; port: number }): ServiceError {
  const metadata = new grpc.Metadata();
  metadata.set('exception', 'not-leader');
  metadata.set('leader-endpoint-host', leader.host);
  metadata.set('leader-endpoint-port', String(leader.port));
  return { code: grpc.status.NOT_FOUND, details: 'Leader info available', metadata };
}

export class EsdbGrpcServer {
  readonly log: EsdbLog;
  port: number;
  role: 'leader' | 'follower';
  leader?: { host: string; port: number };
  /** Reads are accepted and never answered while true. */
  hangReads = false;
  /** Batch appends wait for their deadline and fail with the server's Timeout, unwritten. */
  stallWrites = false;
  /** Every call's method and whether it asked for the leader. */
  readonly calls: { method: string; requiresLeader: boolean }[] = [];
  private server: grpc.Server | null = null;
  private readonly live = new Set<() => void>();

  constructor(opts: EsdbGrpcServerOptions = {}) {
    this.log = opts.log ?? new EsdbLog();
    this.port = opts.port ?? 0;
    this.role = opts.role ?? 'leader';
    this.leader = opts.leader;
  }

  get connectionString(): string {
    return `esdb://127.0.0.1:${this.port}?tls=false`;
  }

  async start(): Promise<this> {
    const server = new grpc.Server();
    server.addService(StreamsService, {
      read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => this.read(call),
      append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, cb: grpc.sendUnaryData<AppendResp>) => this.append(call, cb),
      batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => this.batchAppend(call),
      delete: (_call: unknown, cb: grpc.sendUnaryData<never>) => cb({ code: grpc.status.UNIMPLEMENTED }),
      tombstone: (_call: unknown, cb: grpc.sendUnaryData<never>) => cb({ code: grpc.status.UNIMPLEMENTED }),
    });
    server.addService(ServerFeaturesService, {
      getSupportedMethods: (_call: unknown, cb: grpc.sendUnaryData<SupportedMethods>) => {
        const methods = ['read', 'append', 'batchappend'].map((m) =>
          new SupportedMethod().setServiceName('event_store.client.streams.streams').setMethodName(m),
        );
        cb(null, new SupportedMethods().setMethodsList(methods).setEventStoreServerVersion('24.10.0'));
      },
    });
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${this.port}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );
    this.server = server;
    return this;
  }

  /** Drops every connection and call at once, as a crashed server does. The log stays. */
  kill(): void {
    for (const stop of [...this.live]) stop();
    this.server?.forceShutdown();
    this.server = null;
  }

  /** Serves the same log on the same port again. */
  async restart(): Promise<void> {
    if (this.server) this.kill();
    await this.start();
  }

  async stop(): Promise<void> {
    this.kill();
  }

  /** A NotLeader error when this node is a follower and the call requires the leader. */
  private redirect(metadata: grpc.Metadata, method: string): ServiceError | null {
    const requiresLeader = metadata.get('requires-leader')[0] === 'true';
    this.calls.push({ method, requiresLeader });
    if (this.role === 'follower' && requiresLeader && this.leader) return notLeaderError(this.leader);
    return null;
  }

  private read(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const fail = (err: ServiceError): void => void call.emit('error', err);
    const options = call.request.getOptions();
    if (!options) return fail({ code: grpc.status.INVALID_ARGUMENT, details: 'options required' });
    const isSubscription = options.hasSubscription();
    const redirect = this.redirect(call.metadata, isSubscription ? 'subscribe' : options.hasAll() ? 'readAll' : 'readStream');
    if (redirect) return fail(redirect);
    if (isSubscription) return this.subscribe(call, options);
    if (this.hangReads) return; // accepted, never answered: the client has no deadline on reads
    const count = Number(options.getCount() || '0');
    const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    const out: LogRecord[] = [];
    if (options.hasStream()) {
      const so = options.getStream()!;
      const name = streamName(so.getStreamIdentifier());
      const recs = this.log.stream(name);
      if (!recs) {
        call.write(new ReadResp().setStreamNotFound(new ReadResp.StreamNotFound().setStreamIdentifier(identifier(name))));
        call.end();
        return;
      }
      if (backwards) {
        let i = so.hasEnd() ? recs.length - 1 : so.hasStart() ? 0 : Math.min(Number(so.getRevision()), recs.length - 1);
        for (; i >= 0 && out.length < count; i--) out.push(recs[i]);
      } else {
        let i = so.hasStart() ? 0 : so.hasEnd() ? recs.length : Number(so.getRevision());
        for (; i < recs.length && out.length < count; i++) out.push(recs[i]);
      }
    } else {
      const ao = options.getAll()!;
      const recs = this.log.records;
      let i: number;
      if (ao.hasPosition()) {
        const p = ao.getPosition()!;
        if (p.getCommitPosition() !== p.getPreparePosition())
          return fail({ code: grpc.status.INVALID_ARGUMENT, details: INVALID_POSITION });
        i = this.log.indexAt(BigInt(p.getCommitPosition()));
        if (i < 0) return fail({ code: grpc.status.INVALID_ARGUMENT, details: INVALID_POSITION });
        if (backwards) i -= 1; // backwards: strictly before the position
      } else if (ao.hasEnd()) {
        i = backwards ? recs.length - 1 : recs.length;
      } else {
        i = backwards ? -1 : 0;
      }
      if (backwards) for (; i >= 0 && out.length < count; i--) out.push(recs[i]);
      else for (; i < recs.length && out.length < count; i++) out.push(recs[i]);
    }
    for (const r of out) call.write(toReadEvent(r));
    call.end();
  }

  private subscribe(call: grpc.ServerWritableStream<ReadReq, ReadResp>, options: ReadReq.Options): void {
    const ao = options.getAll();
    if (!ao) return void call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'stream subscriptions are not served' });
    // Confirmed first, whatever comes next.
    call.write(new ReadResp().setConfirmation(new ReadResp.SubscriptionConfirmation().setSubscriptionId(`sub-${Date.now()}`)));
    let from: number;
    if (ao.hasPosition()) {
      const p = ao.getPosition()!;
      const at = p.getCommitPosition() === p.getPreparePosition() ? this.log.indexAt(BigInt(p.getCommitPosition())) : -1;
      if (at < 0) return void call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: INVALID_POSITION });
      from = at + 1; // strictly after
    } else {
      from = ao.hasEnd() ? this.log.records.length : 0;
    }
    for (let i = from; i < this.log.records.length; i++) call.write(toReadEvent(this.log.records[i]));
    call.write(new ReadResp().setCaughtUp(new ReadResp.CaughtUp()));
    const unsubscribe = this.log.onAppend((r) => {
      if (!call.cancelled && !call.writableEnded) call.write(toReadEvent(r));
    });
    const stop = () => {
      unsubscribe();
      this.live.delete(stop);
    };
    this.live.add(stop);
    call.on('cancelled', stop);
    call.on('close', stop);
  }

  private append(call: grpc.ServerReadableStream<AppendReq, AppendResp>, cb: grpc.sendUnaryData<AppendResp>): void {
    const redirect = this.redirect(call.metadata, 'append');
    let options: AppendReq.Options | undefined;
    const events: Proposed[] = [];
    let failed: ServiceError | null = redirect;
    call.on('data', (req: AppendReq) => {
      if (failed) return;
      try {
        if (req.hasOptions()) options = req.getOptions();
        else if (req.hasProposedMessage()) events.push(proposed(req.getProposedMessage()!));
      } catch (err) {
        failed = err as ServiceError;
      }
    });
    call.on('end', () => {
      if (failed) return cb(failed);
      if (!options) return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'options required' });
      const expected = expectedOf(options.hasRevision() ? options.getRevision() : undefined, options);
      const outcome = this.log.write(streamName(options.getStreamIdentifier()), expected, events);
      const resp = new AppendResp();
      if (outcome.kind === 'success') {
        const ok = new AppendResp.Success();
        if (outcome.lastRevision < 0n) ok.setNoStream(new Empty());
        else ok.setCurrentRevision(outcome.lastRevision.toString());
        if (outcome.position < 0n) ok.setNoPosition(new Empty());
        else
          ok.setPosition(
            new AppendResp.Position().setCommitPosition(outcome.position.toString()).setPreparePosition(outcome.position.toString()),
          );
        resp.setSuccess(ok);
      } else {
        const w = new AppendResp.WrongExpectedVersion();
        if (outcome.current === 'no_stream') w.setCurrentNoStream(new Empty());
        else w.setCurrentRevision(outcome.current.toString());
        if (typeof expected === 'bigint') w.setExpectedRevision(expected.toString());
        else if (expected === 'no_stream') w.setExpectedNoStream(new Empty());
        else if (expected === 'stream_exists') w.setExpectedStreamExists(new Empty());
        else w.setExpectedAny(new Empty());
        resp.setWrongExpectedVersion(w);
      }
      cb(null, resp);
    });
  }

  private batchAppend(call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>): void {
    const pending = new Map<string, { stream: string; expected: Expected; events: Proposed[]; deadline: number }>();
    const stop = () => {
      this.live.delete(stop);
    };
    this.live.add(stop);
    call.on('data', (req: BatchAppendReq) => {
      const correlation = req.getCorrelationId()!;
      const key = correlation.getString();
      const redirect = this.redirect(call.metadata, 'batchAppend');
      if (redirect) {
        // The server fails the whole call: every append in flight on it gets the NotLeader.
        call.emit('error', redirect);
        return;
      }
      const o = req.getOptions();
      if (o) {
        const expected = expectedOf(o.hasStreamPosition() ? o.getStreamPosition() : undefined, o);
        const deadline = o.hasDeadline() ? o.getDeadline()!.toDate().getTime() : Infinity;
        pending.set(key, { stream: streamName(o.getStreamIdentifier()), expected, events: [], deadline });
      }
      const p = pending.get(key);
      if (!p) return;
      for (const m of req.getProposedMessagesList()) p.events.push(proposed(m));
      if (!req.getIsFinal()) return;
      pending.delete(key);
      if (this.stallWrites) {
        const timeout = new Any();
        timeout.pack(new Empty().serializeBinary(), 'event_store.client.Timeout');
        const status = new PbStatus().setCode(4 /* DEADLINE_EXCEEDED */).setMessage('Timeout').setDetails(timeout);
        const answer = () => {
          if (!call.cancelled && !call.writableEnded)
            call.write(new BatchAppendResp().setCorrelationId(correlation).setStreamIdentifier(identifier(p.stream)).setError(status));
        };
        setTimeout(answer, Math.max(0, Math.min(p.deadline - Date.now(), 60_000)));
        return;
      }
      const outcome = this.log.write(p.stream, p.expected, p.events);
      call.write(this.batchResponse(correlation, p.stream, p.expected, outcome));
    });
    call.on('end', () => {
      stop();
      call.end();
    });
    call.on('cancelled', stop);
  }

  private batchResponse(correlation: UUID, stream: string, expected: Expected, outcome: WriteOutcome): BatchAppendResp {
    const resp = new BatchAppendResp().setCorrelationId(correlation).setStreamIdentifier(identifier(stream));
    if (outcome.kind === 'success') {
      const ok = new BatchAppendResp.Success();
      if (outcome.lastRevision < 0n) ok.setNoStream(new PbEmpty());
      else ok.setCurrentRevision(outcome.lastRevision.toString());
      if (outcome.position < 0n) ok.setNoPosition(new PbEmpty());
      else
        ok.setPosition(
          new AllStreamPosition().setCommitPosition(outcome.position.toString()).setPreparePosition(outcome.position.toString()),
        );
      return resp.setSuccess(ok);
    }
    const w = new PbWrongExpectedVersion();
    if (outcome.current === 'no_stream') w.setCurrentNoStream(new PbEmpty());
    else w.setCurrentStreamRevision(outcome.current.toString());
    if (typeof expected === 'bigint') w.setExpectedStreamPosition(expected.toString());
    else if (expected === 'no_stream') w.setExpectedNoStream(new PbEmpty());
    else if (expected === 'stream_exists') w.setExpectedStreamExists(new PbEmpty());
    else w.setExpectedAny(new PbEmpty());
    const details = new Any();
    details.pack(w.serializeBinary(), 'event_store.client.WrongExpectedVersion');
    const status = new PbStatus().setCode(9 /* FAILED_PRECONDITION */).setMessage('WrongExpectedVersion').setDetails(details);
    return resp.setError(status);
  }
}

/** Starts a test server on a free port (or `opts.port`). */
export async function startEsdbGrpcServer(opts: EsdbGrpcServerOptions = {}): Promise<EsdbGrpcServer> {
  return new EsdbGrpcServer(opts).start();
}
