/** What other areas (and the portal) may use of inference; its events are in ./events.ts. */
export { MODEL_CONFIGS } from './models';
