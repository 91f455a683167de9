import { accountsModule } from '../../src/accounts/module';
import { billingModuleWith } from '../../src/billing/module';
import { PartitionedProjector } from '../../src/platform/projections/partitioned-projector';
import { partitionKeyspaces, partitionMembersKey } from '../../src/platform/projections/partitions';
import { sweepAbandoned } from '../../src/inference/workers/sweeper';
import { chargeAutoReload } from '../../src/billing/usecases';
import { projectionsOf, reactorsOf, type Module, type Services } from '../../src/services';
import { ApiProcess } from './api';
import { progressOf, type Shared, simServices } from './services';
import { Proc } from './world';

/**
 * The simulated cluster: 1–3 api processes, 1–3 projectors sharing the partitions, a worker (the
 * auto-reload jobs) and the sweeper, each built from production parts over simulated ports. A
 * process that crashes is restarted later as a new process (nothing of its memory survives).
 */

// Each area's module carries its hot-path read models (the key index, balances).
export const MODULES: Module[] = [accountsModule, billingModuleWith({ sweepIntervalMs: 0 })];

export class Cluster {
  apis: ApiProcess[] = [];
  projectors: Array<{ proc: Proc; projector: PartitionedProjector; owner: string }> = [];
  worker!: { proc: Proc; s: Services };
  sweeper!: { proc: Proc; s: Services };
  private serial = 0;
  /** Lease owners of projectors that died (their leases are expired when the faults stop). */
  readonly deadOwners: string[] = [];
  readonly projectionNames: string[];

  constructor(
    readonly sh: Shared & { admin: import('ioredis').Redis },
    readonly counts: { apis: number; projectors: number },
  ) {
    const probe = simServices(sh, new Proc('probe', 'world', false));
    this.projectionNames = projectionsOf(probe, MODULES).map((p) => p.name);
  }

  get world() {
    return this.sh.world;
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.counts.projectors; i++) this.startProjector(i);
    for (let i = 0; i < this.counts.apis; i++) this.startApi(i);
    this.startWorker();
    this.startSweeper();
  }

  private nextName(kind: string, slot: number): string {
    return `${kind}${slot}.${++this.serial}`;
  }

  startApi(slot: number): void {
    const proc = new Proc(this.nextName('api', slot), 'api', true);
    const s = simServices(this.sh, proc);
    s.progress = progressOf(this.sh, proc, s, this.projectionNames);
    this.apis[slot] = new ApiProcess(this.world, proc, s, 30_000);
    proc.onCrash.push(() => this.restartLater(() => this.startApi(slot)));
  }

  startProjector(slot: number): void {
    const proc = new Proc(this.nextName('projector', slot), 'projector', true);
    const s = simServices(this.sh, proc);
    const owner = this.world.rng.uuid();
    const projector = new PartitionedProjector({
      store: s.store,
      prefix: s.config.REDIS_PREFIX,
      partitions: s.config.PROJECTION_PARTITIONS,
      leaseMs: s.config.PROJECTION_LEASE_MS,
      connect: (name) => s.connectRedis(name),
      projections: projectionsOf(s, MODULES),
      reactors: reactorsOf(s, MODULES),
      batchSize: s.config.PROJECTION_BATCH_SIZE,
      log: s.log,
      owner,
      now: () => this.world.nowMs(),
      watchIntervalMs: 60_000,
    });
    this.projectors[slot] = { proc, projector, owner };
    this.world.within(proc, () => void projector.start().catch(() => undefined));
    proc.onCrash.push(() => {
      this.deadOwners.push(owner);
      // A dead projector's leases run out after PROJECTION_LEASE_MS of simulated time.
      this.world.within(this.world.worldProc, () =>
        setTimeout(() => {
          void this.world.call(
            'redis',
            `lease ttl of ${owner.slice(0, 8)}`,
            null,
            [],
            () => this.expireLeasesNow(owner),
            () => new Error('never'),
          );
        }, s.config.PROJECTION_LEASE_MS),
      );
      this.restartLater(() => this.startProjector(slot));
    });
  }

  /**
   * Redis's lease TTL on simulated time: the leases held by `owner` are deleted (expired), and its
   * heartbeat leaves the members set, as it has by then in production (both are PROJECTION_LEASE_MS
   * old). Left there, a dead projector still counted among the members when the faults stop cuts
   * the others' fair share, and a partition stays unowned after its lease is gone.
   */
  async expireLeasesNow(owner: string): Promise<void> {
    const { config } = this.sh;
    const n = config.PROJECTION_PARTITIONS;
    await this.sh.admin.zrem(partitionMembersKey(config.REDIS_PREFIX, n), owner);
    for (const { lease: key } of partitionKeyspaces(config.REDIS_PREFIX, n)) {
      await this.sh.admin.eval(
        "if redis.call('GET', KEYS[1]) and string.find(redis.call('GET', KEYS[1]), ARGV[1], 1, true) then return redis.call('DEL', KEYS[1]) end return 0",
        1,
        key,
        owner,
      );
    }
    this.world.trace(`leases of ${owner.slice(0, 8)} expired`);
  }

  startWorker(): void {
    const proc = new Proc(this.nextName('worker', 0), 'worker', true);
    const s = simServices(this.sh, proc);
    s.progress = progressOf(this.sh, proc, s, ['balances']);
    this.worker = { proc, s };
    const queue = this.sh.queue;
    const lockMs = 30_000;
    this.world.within(proc, () =>
      setInterval(() => {
        const job = queue.take(lockMs);
        if (!job) return;
        this.world.trace(`${proc.name} job ${job.jobId.slice(0, 30)} attempt ${job.attempts}`);
        chargeAutoReload(
          { store: s.store, readModels: s.readModels, progress: s.progress, gateway: s.gateway, now: s.now, log: s.log },
          job.data.workspaceId,
          { cause: job.data.cause },
        ).then(
          () => queue.done(job),
          () => queue.failed(job),
        );
      }, 500),
    );
    proc.onCrash.push(() => this.restartLater(() => this.startWorker()));
  }

  startSweeper(): void {
    const proc = new Proc(this.nextName('sweeper', 0), 'sweeper', true);
    const s = simServices(this.sh, proc);
    this.sweeper = { proc, s };
    const prices = {
      inputNanoUsdPerToken: s.config.PRICE_INPUT_NANO_USD_PER_TOKEN,
      outputNanoUsdPerToken: s.config.PRICE_OUTPUT_NANO_USD_PER_TOKEN,
    };
    let running = false;
    this.world.within(proc, () =>
      setInterval(() => {
        if (running) return;
        running = true;
        void sweepAbandoned(
          {
            store: s.store,
            redis: s.redis,
            ks: s.ks,
            prices,
            now: s.now,
            newId: s.newId,
            log: s.log,
            partitions: s.config.PROJECTION_PARTITIONS,
          },
          { minAgeMs: s.config.SWEEPER_MIN_AGE_MS },
        )
          .catch(() => undefined)
          .finally(() => (running = false));
      }, s.config.SWEEPER_INTERVAL_MS),
    );
    proc.onCrash.push(() => this.restartLater(() => this.startSweeper()));
  }

  private readonly restarts: Array<() => void> = [];

  private restartLater(start: () => void): void {
    this.restarts.push(start);
    this.world.within(this.world.worldProc, () =>
      setTimeout(
        () => {
          const i = this.restarts.indexOf(start);
          if (i < 0) return;
          this.restarts.splice(i, 1);
          start();
        },
        this.world.rng.between(200, 8000),
      ),
    );
  }

  /** Liveness: every process that died is running again. */
  restartAll(): void {
    for (const start of this.restarts.splice(0)) start();
  }

  liveApis(): ApiProcess[] {
    return this.apis.filter((a) => !a.proc.dead);
  }

  allProcs(): Proc[] {
    return [...this.apis.map((a) => a.proc), ...this.projectors.map((p) => p.proc), this.worker.proc, this.sweeper.proc];
  }
}
