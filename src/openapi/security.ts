import type { Security } from '../platform/http/contract';
import { KEY_PREFIX, SESSION_COOKIE } from '../accounts';

/** The OpenAPI security schemes, and which a contract's `security` names stand for. */

export const SECURITY_SCHEMES = {
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: `${KEY_PREFIX}…`,
    description: `An API key with the inference scope, created in a workspace (POST /v1/workspaces/{ws}/keys): \`Authorization: Bearer ${KEY_PREFIX}…\`.`,
  },
  sessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description:
      `The session cookie POST /v1/login sets (HttpOnly, SameSite=Lax). A write (not GET/HEAD/OPTIONS) authenticated by it must ` +
      "also send `X-Requested-With` (any value) or an `Origin` equal to the request's own origin, else 403 (CSRF).",
  },
  sessionToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The session token POST /v1/login answers, as `Authorization: Bearer <sessionToken>` (no CSRF header needed).',
  },
  operatorToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token: `Authorization: Bearer <ADMIN_TOKEN>`. Without ADMIN_TOKEN set, /admin answers 404.',
  },
  stripeSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'Stripe-Signature',
    description:
      "Stripe's signature over the raw body with STRIPE_WEBHOOK_SECRET; its timestamp must be within 300 s of the server's clock.",
  },
} as const;

export type SchemeName = keyof typeof SECURITY_SCHEMES;

/** Each contract name → the schemes any one of which is enough (a session comes as a cookie or a bearer token). */
const ALTERNATIVES: Record<Security, SchemeName[]> = {
  apiKey: ['apiKey'],
  session: ['sessionCookie', 'sessionToken'],
  operatorToken: ['operatorToken'],
  stripeSignature: ['stripeSignature'],
};

export function securityRequirements(security: Security[]): Array<Record<string, string[]>> {
  return security.flatMap((s) => ALTERNATIVES[s]).map((name) => ({ [name]: [] }));
}
