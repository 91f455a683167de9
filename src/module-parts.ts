import type { Projection, Reactor } from './platform/projections/projection';
import type { Module, Services } from './services';

export function projectionsOf(s: Services, modules: readonly Module[]): Projection[] {
  return modules.flatMap((m) => m.projections?.(s) ?? []);
}

/** The BullMQ queues the modules name for /metrics, in module order. */
export function queuesOf(modules: readonly Module[]): string[] {
  return modules.flatMap((m) => m.queues ?? []);
}

export function reactorsOf(s: Services, modules: readonly Module[]): Reactor[] {
  return modules.flatMap((m) => m.reactors?.(s) ?? []);
}
