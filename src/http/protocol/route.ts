import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

type RequestRouteView = FastifyRequest['routeOptions']

declare module 'fastify' {
  interface FastifyRequest {
    /** Internal: `routeOptions`, read once per request (see routeOf). */
    routeOptionsOnce: RequestRouteView | null
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
  return (req.routeOptionsOnce ??= req.routeOptions)
}

/** Whether the request's route answers with a long-lived stream (route config `longLived`). */
export function isLongLived (req: FastifyRequest): boolean {
  return routeOf(req).config.longLived === true
}

/** Gives every request the slot routeOf fills, so requests keep one shape. */
export const routePlugin = fp(async function route (app: FastifyInstance) {
  app.decorateRequest('routeOptionsOnce', null)
}, { name: 'route' })
