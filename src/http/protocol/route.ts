import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

type RequestRouteView = FastifyRequest['routeOptions']

/** The request's slot for its `routeOptions`, read once (routeOf): this module's alone. */
const ROUTE = Symbol('routeOptions')

declare module 'fastify' {
  interface FastifyRequest {
    [ROUTE]: RequestRouteView | null
  }
  interface FastifyContextConfig {
    /**
     * The answer is a stream that stays open (GET /events): it has no REQUEST_TIMEOUT_MS deadline
     * and holds no place in OVERLOAD_MAX_IN_FLIGHT; the route ends its streams on shutdown itself.
     */
    longLived?: boolean
  }
}

/**
 * The request's `routeOptions` (url, config, schema). Fastify builds that object anew on every
 * read; the hooks read it about ten times per request, so it is built once and kept.
 */
export function routeOf (req: FastifyRequest): RequestRouteView {
  return (req[ROUTE] ??= req.routeOptions)
}

/** Whether the request's route answers with a long-lived stream (route config `longLived`). */
export function isLongLived (req: FastifyRequest): boolean {
  return routeOf(req).config.longLived === true
}

/** Gives every request the slot routeOf fills, so requests keep one shape. */
export const routePlugin = fp(async function route (app: FastifyInstance) {
  app.decorateRequest(ROUTE, null)
}, { name: 'route' })
