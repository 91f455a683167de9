/**
 * Planted bugs (issue 32, item 5): small patches of the code under simulation that the swarm must
 * catch. Each is applied to the source text as it is loaded, in a simulator process started with
 * `--plant NAME` (./hook.ts), never on disk. `seed` replays a schedule that catches it and `caught`
 * names the invariant that breaks; test/sim/int/planted.test.ts runs them. A patch that no longer
 * matches its file exactly once fails that test: move it with the code it breaks.
 *
 * A seed moves with any change to the simulator's draws or to the money path's sequence of
 * commands; the test then searches the next 40 seeds and prints the one that catches it. Re-record
 * it, or find one with
 *   npm run sim -- --seed S --search 40 --expect INVARIANT --plant NAME
 *   npm run sim:swarm -- --seconds 300 --workers 2 --plant NAME      (a bug without a seed yet)
 * and check it with npm run sim -- --seed S --plant NAME (and that the seed passes without it).
 */

export interface Planted {
  name: string;
  /** What the bug does, in one line. */
  what: string;
  /** Relative to src/. */
  file: string;
  find: string;
  replace: string;
  /** A seed that catches it, and the invariant it breaks there (0: none found yet, see the test). */
  seed: number;
  caught: string;
}

export const PLANTED: Planted[] = [
  {
    name: 'deposit-idempotency',
    what: 'the deposit idempotency check removed: a retried deposit is a new deposit',
    file: 'billing/usecases/deposit.ts',
    find: 'const depositId = depositIdFor(workspaceId, cmd.idempotencyKey);',
    replace: 'const depositId = depositIdFor(workspaceId, cmd.idempotencyKey + s.newId());',
    seed: 13,
    caught: 'one-deposit-per-idempotency-key',
  },
  {
    name: 'hold-released-before-debit',
    what: 'a hold released before its debit commits (the completion is appended after the release)',
    file: 'inference/usecases/completion-recorder.ts',
    find: 'await this.s.store.append(stream, events, { expectedRevision: 0n });',
    replace:
      'await this.reservations.release(p.facts.workspaceId, p.facts.requestId);\n        await this.s.store.append(stream, events, { expectedRevision: 0n });',
    seed: 16,
    caught: 'every-request-closed',
  },
  {
    name: 'projector-applies-twice',
    what: 'a projector applying a redelivered event (the one at its checkpoint) again',
    file: 'platform/projections/apply-batch.ts',
    find: 'if (e.position <= last) continue;',
    replace: 'if (e.position < last) continue;',
    seed: 13,
    caught: 'balance-equals-ledger',
  },
  {
    name: 'reload-without-idempotency-key',
    what: 'an auto-reload charged without its idempotency key (a fresh key per attempt)',
    file: 'billing/usecases/auto-reload-charge.ts',
    find: 'idempotencyKey: idempotencyKeys.reload(reload.reloadId),',
    replace: 'idempotencyKey: idempotencyKeys.reload(reload.reloadId) + `:${d.now().getTime()}`,',
    seed: 0,
    caught: '',
  },
  {
    name: 'fence-check-removed',
    what: "the fence check removed from a projector's batch guard",
    file: 'platform/projections/guard.lua',
    find: "if fence ~= '' and redis.pcall('GET', fence) ~= token then r = -1 end",
    replace: 'if false then r = -1 end',
    seed: 0,
    caught: '',
  },
  {
    name: 'sweeper-closes-live-request',
    what: 'the sweeper closing a live request (its minimum age ignored)',
    file: 'inference/workers/sweeper.ts',
    find: 'const open = await reservations.openBefore(now.getTime() - opts.minAgeMs, opts.limit ?? 500);',
    replace: 'const open = await reservations.openBefore(now.getTime(), opts.limit ?? 500);',
    seed: 138,
    caught: 'sweeper-leaves-live-requests',
  },
  {
    name: 'mark-pending-recreates-hold',
    what: 'markPending made non-idempotent: run after the hold is gone, it holds the cost again',
    file: 'billing/projections/balances/to-pending.lua',
    find: 'if not record then return 0 end',
    replace: "if not record then record = '0' end",
    seed: 7,
    caught: 'no-hold-left',
  },
  {
    name: 'lost-ack-taken-as-failed',
    what: 'a lost acknowledgement treated as "not committed": a charge whose answer was lost recorded as failed',
    file: 'billing/usecases/deposit.ts',
    find: '    if (!(err instanceof GatewayUnavailable)) throw err;\n    await readYourWrites(s, requested.appended);',
    replace:
      "    if (!(err instanceof GatewayUnavailable)) throw err;\n    outcome = { status: 'failed', paymentIntentId: null, code: 'processing_error', reason: 'no answer' };\n  }\n  if (outcome === undefined) {\n    await readYourWrites(s, requested.appended);",
    seed: 31,
    caught: 'no-charge-for-a-failed-entry',
  },
  {
    name: 'billed-output-not-received',
    what: 'a non-streaming caller who gave up billed the output generated so far (the first bug the simulator found)',
    file: 'inference/usecases/engine.ts',
    find: 'const outputTokens = received ? result.outputTokens : 0;',
    replace: 'const outputTokens = result.outputTokens;',
    seed: 26,
    caught: 'billed-only-what-was-received',
  },
  {
    name: 'runner-start-keeps-lease',
    what: 'a projector whose runner failed to load its state keeps (and renews) the partition lease, so nobody applies that partition',
    file: 'platform/projections/partitioned-projector.ts',
    find: '      await this.drop(i, true);\n      throw err;',
    replace: '      throw err;',
    seed: 204,
    caught: 'no-hold-left',
  },
];
