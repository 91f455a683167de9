export { chargeAutoReload, type ReloadDeps, type ReloadHooks, type ReloadResult, type ReloadStep } from '../../usecases/auto-reload-charge';
export { enqueueReload, RELOAD_QUEUE, reloadJobId, reloadQueue, type QueueOptions, type ReloadJobData } from './queue';
export { autoReloadReactor } from './reactor';
export { startReloadWorker, startReloadWorkerFor, type ReloadWorkerOptions, type RunningReloadWorker } from './worker';
