import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import { problemResponses } from '../routes/shared/schemas.ts'
import { SYSTEM_ERRORS } from '../routes/system/health-routes.ts'

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

  app.addHook('onResponse', async (req, reply) => {
    const labels = { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) }
    requests.inc(labels)
    duration.observe(labels, reply.elapsedTime / 1000)
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
