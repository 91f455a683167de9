import type { Module } from '../services';
import { portalRouter } from './router';

/** The developer portal: the built single-page app at /, and two small helper routes (docs/PORTAL.md). */
export const portalModule: Module = {
  name: 'portal',
  router: (s) => portalRouter(s),
};
