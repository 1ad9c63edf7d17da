import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import { problemResponses } from '../routes/shared/schemas.ts'
import { SYSTEM_ERRORS } from '../routes/system/health-routes.ts'
import { routeOf } from './route.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's Prometheus registry: background work (jobs, webhooks) adds its counters here. */
    metrics: Registry
  }
}

/**
 * Prometheus metrics: request counts and latency by route (the pattern, never the raw path,
 * so cardinality stays bounded), method and status. One registry per app instance.
 */
export const metricsPlugin = fp(async function metrics (app: FastifyInstance) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  app.decorate('metrics', registry)
  const labelNames = ['method', 'route', 'status'] as const
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request to response',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })

  // prom-client hashes the label object on every inc/observe; the series are few (method x
  // route x status), so each one's children are looked up once and kept, by the route's own
  // config object (one per route and method), the method and the status: no key is built per
  // request.
  type Series = { count: { inc: () => void }, time: { observe: (v: number) => void } }
  const series = new WeakMap<object, Map<string, Map<number, Series>>>()
  const noConfig = {}
  app.addHook('onResponse', (req, reply, done) => {
    const options = routeOf(req)
    const config = (options.config as object | undefined) ?? noConfig
    let byMethod = series.get(config)
    if (byMethod === undefined) series.set(config, byMethod = new Map())
    let byStatus = byMethod.get(req.method)
    if (byStatus === undefined) byMethod.set(req.method, byStatus = new Map())
    let s = byStatus.get(reply.statusCode)
    if (s === undefined) {
      const labels = { method: req.method, route: options.url ?? 'unmatched', status: String(reply.statusCode) }
      s = { count: requests.labels(labels), time: duration.labels(labels) }
      byStatus.set(reply.statusCode, s)
    }
    s.count.inc()
    s.time.observe(reply.elapsedTime / 1000)
    done()
  })

  app.get('/metrics', {
    config: { ignoresCredentials: true },
    schema: {
      tags: ['operations'],
      summary: 'Prometheus metrics (text exposition format)',
      produces: ['text/plain'],
      response: { 200: { type: 'string', description: 'Prometheus text exposition format 0.0.4.' }, ...problemResponses(...SYSTEM_ERRORS) },
    },
  }, async (_req, reply) => {
    reply.header('content-type', registry.contentType).header('cache-control', 'no-store')
    return await registry.metrics()
  })
}, { name: 'metrics' })
