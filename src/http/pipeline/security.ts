import type { IncomingMessage, ServerResponse } from 'node:http'
import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import helmet, { type HelmetOptions } from 'helmet'
import fp from 'fastify-plugin'
import type { Config } from '../../config.ts'

/**
 * A JSON API loads nothing into a browser page, so its answers allow nothing. The /docs page
 * (Swagger UI, served from this service) needs its own scripts, styles and a fetch of /openapi.json;
 * Swagger UI sets inline `style` attributes, hence 'unsafe-inline' for styles only.
 */
export const API_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
export const DOCS_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

/**
 * The editor (/admin): its own scripts and style sheets only, nothing inline, nothing from another
 * origin; images also as `data:` (an uploaded image's blurred placeholder) and `blob:` (a picked file shown
 * before upload); requests to this service only.
 */
export const ADMIN_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " +
  "font-src 'self'; manifest-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/** Response headers a cross-origin script may read (CORS hides all but a few by default). */
const EXPOSED_HEADERS = [
  'Location', 'ETag', 'Last-Modified', 'Link', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'X-Request-Id', 'traceparent',
  'X-Total-Count', 'Preference-Applied', 'Idempotent-Replayed', 'API-Version', 'Deprecation', 'Sunset', 'Content-Language',
  'Accept-Patch', 'Allow', 'WWW-Authenticate', 'Content-Range', 'Accept-Ranges',
]
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/**
 * Of helmet's headers, those that mean something on a JSON answer (OWASP's REST Security Cheat
 * Sheet, plus CORP and Referrer-Policy). The others govern HTML documents or old browsers and
 * plug-ins (Cross-Origin-Opener-Policy, Origin-Agent-Cluster, X-DNS-Prefetch-Control,
 * X-Download-Options, X-Permitted-Cross-Domain-Policies, X-XSS-Protection): only the HTML pages,
 * /docs and /admin, get them. Each header is work on every answer (docs/performance.md).
 */
const API_HEADERS = ['strict-transport-security', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'cross-origin-resource-policy'] as const

function isPageOf (prefix: string, url: string): boolean {
  return url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`)
}

/**
 * The headers helmet sets with these options. None of them depends on the request (no CSP
 * nonces), so helmet runs once, at start-up, against a response that only records them;
 * @fastify/helmet built a new helmet middleware and a reply decorator on every request.
 */
export function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: string | number | readonly string[]) { headers[name.toLowerCase()] = String(value) },
    removeHeader (name: string) { delete headers[name.toLowerCase()] },
  }
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {})
  return headers
}

/** A CORS preflight: OPTIONS with Origin and Access-Control-Request-Method (Fetch standard §3.2.2). */
function isPreflight (req: FastifyRequest): boolean {
  return req.method === 'OPTIONS' && typeof req.headers.origin === 'string' && typeof req.headers['access-control-request-method'] === 'string'
}

/**
 * Browser-facing hardening: helmet's headers with a CSP for a JSON API (and a looser one for /docs),
 * and CORS for the origins in CORS_ORIGINS (none: no CORS headers at all).
 *
 * @fastify/cors routes every OPTIONS to its own `OPTIONS *` handler. Only a real preflight from an
 * allowed origin is answered there; any other OPTIONS falls through to the not-found handler, which
 * answers 204 with `Allow` (src/http/pipeline/routing.ts), so both behaviours coexist.
 */
function fixedHeaders (origins: readonly string[]): Record<string, string> {
  return helmetHeaders({
    contentSecurityPolicy: false,
    // Cross-origin readers need the response; CORS, not CORP, decides who may read it.
    crossOriginResourcePolicy: { policy: origins.length > 0 ? 'cross-origin' : 'same-origin' },
    referrerPolicy: { policy: 'no-referrer' },
    xFrameOptions: { action: 'deny' },
  })
}

/** The security headers of every answer of the API (not /docs), for answers written without Fastify. */
export function apiSecurityHeaders (origins: readonly string[]): Record<string, string> {
  const fixed = fixedHeaders(origins)
  const api: Record<string, string> = { 'content-security-policy': API_CSP }
  for (const name of API_HEADERS) if (fixed[name] !== undefined) api[name] = fixed[name]
  return api
}

export const securityPlugin = fp(async function security (app: FastifyInstance, opts: { config: Config }) {
  const origins = opts.config.corsOrigins
  const api = apiSecurityHeaders(origins)
  const docs = { ...fixedHeaders(origins), 'content-security-policy': DOCS_CSP }
  const admin = { ...fixedHeaders(origins), 'content-security-policy': ADMIN_CSP }
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.headers(isPageOf('/docs', req.url) ? docs : isPageOf('/admin', req.url) ? admin : api)
    done()
  })

  if (origins.length === 0) return
  const anyOrigin = origins.includes('*')
  const allowed = new Set(origins)
  const base: FastifyCorsOptions = {
    origin: anyOrigin ? '*' : [...origins],
    methods: METHODS,
    exposedHeaders: EXPOSED_HEADERS,
    // Bearer tokens, never cookies: credentialed requests are not needed, and not allowed.
    credentials: false,
    maxAge: 600,
    strictPreflight: false,
  }
  await app.register(cors, {
    hideOptionsRoute: true,
    delegator: (req, callback) => {
      const origin = req.headers.origin
      if (origin === undefined || (!anyOrigin && !allowed.has(origin))) {
        callback(null, { ...base, origin: false })
        return
      }
      callback(null, isPreflight(req as FastifyRequest) ? base : { ...base, preflight: false })
    },
  })
}, { name: 'security' })
