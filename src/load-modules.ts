import type { Module } from './services';

/**
 * Every feature module (src/modules.ts), loaded on first use: one-shot commands that need no feature
 * module (the CLI's `events read`, a test's fixture modules) start without loading every feature.
 */
export function loadModules(): Module[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: loaded on the first call, not at import
  return (require('./modules') as typeof import('./modules')).modules;
}
