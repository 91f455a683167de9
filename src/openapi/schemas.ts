import { z } from 'zod';
import { route, RouteContract } from '../platform/http/contract';
import { transportErrors } from '../platform/http/error-bodies';

/** This document and its reference page. */

export const openApiJson = route({
  method: 'get',
  path: '/openapi.json',
  summary: 'This OpenAPI 3.1 document',
  description: 'Generated from the route contracts the server validates requests with, so it describes exactly what is served.',
  tags: ['meta'],
  security: [],
  responses: {
    200: {
      description: 'The document, generated from the same schemas the routes validate with',
      schema: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }),
    },
    ...transportErrors,
  },
});

export const docsPage = route({
  method: 'get',
  path: '/docs',
  summary: 'The API reference page (Swagger UI over /openapi.json)',
  description: 'GET /docs redirects to /docs/; the page and its scripts and styles are served from this service (no CDN).',
  tags: ['meta'],
  security: [],
  responses: {
    200: { description: 'The page', contentType: 'text/html; charset=utf-8', schema: z.string() },
    301: { description: 'GET /docs → /docs/ (the page loads its files relative to it)', headers: { Location: '/docs/' } },
    ...transportErrors,
  },
});

export const routes: RouteContract[] = [openApiJson, docsPage];
