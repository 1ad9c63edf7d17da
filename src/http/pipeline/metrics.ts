import { createHash, timingSafeEqual } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, type Registry } from 'prom-client'
import type { Config } from '../../config.ts'
import { AppError } from '../../errors.ts'
import { buildCatalogue, type Catalogue } from '../../catalogue.ts'
import { problemsPlugin, sendProblem } from '../protocol/problems.ts'
import { routeOf, routePlugin } from '../protocol/route.ts'
import { genRequestId, tracingPlugin } from './tracing.ts'

/**
 * Prometheus metrics: request counts and latency by route (the pattern, never the raw path,
 * so cardinality stays bounded), method and status. One registry per app instance; it is
 * served by the metrics listener (buildMetricsApp), not on the API.
 */
export const metricsPlugin = fp(async function metrics (app: FastifyInstance, { registry }: { registry: Registry }) {
  collectDefaultMetrics({ register: registry })
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
}, { name: 'metrics' })

const METRICS_REALM = 'Bearer realm="metrics"'

function digest (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/** `Authorization: Bearer <token>` as Prometheus sends it (`authorization.credentials`), in constant time. */
function checkToken (catalogue: Catalogue, expected: Buffer) {
  return function metricsToken (req: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const header = req.headers.authorization
    if (header === undefined || header.trim() === '') {
      sendProblem(catalogue, req, reply, new AppError('UNAUTHENTICATED', 'Scraping the metrics needs the METRICS_TOKEN as a bearer token.', { headers: { 'www-authenticate': METRICS_REALM } }))
      return
    }
    const m = /^Bearer +(\S+) *$/i.exec(header)
    if (m === null || !timingSafeEqual(digest(m[1]!), expected)) {
      sendProblem(catalogue, req, reply, new AppError('INVALID_TOKEN', 'This is not the metrics token.', { headers: { 'www-authenticate': `${METRICS_REALM}, error="invalid_token"` } }))
      return
    }
    done()
  }
}

/**
 * The metrics listener's app: `GET /metrics` of `registry` in the Prometheus text format, and
 * nothing else. It is served on a port of its own (METRICS_PORT), so that process figures, route
 * names and counts are not open to whoever can reach the API; METRICS_TOKEN adds a bearer token.
 * Never listens: the server does (src/server.ts).
 */
export async function buildMetricsApp (registry: Registry, settings: Pick<Config['metrics'], 'token'>, logger?: FastifyBaseLogger): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger !== undefined ? { loggerInstance: logger.child({ listener: 'metrics' }) } : { logger: false }),
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    genReqId: genRequestId,
    requestIdHeader: false,
    return503OnClosing: true,
  })
  await app.register(routePlugin)
  await app.register(tracingPlugin)
  // The listener answers only the core's problems.
  const catalogue = buildCatalogue([])
  await app.register(problemsPlugin, { catalogue })
  app.setNotFoundHandler((req, reply) => sendProblem(catalogue, req, reply, new AppError('NOT_FOUND', 'The metrics listener serves GET /metrics only.')))
  const onRequest = settings.token === null ? [] : [checkToken(catalogue, digest(settings.token))]
  app.get('/metrics', { onRequest }, async (_req, reply) => {
    reply.header('content-type', registry.contentType).header('cache-control', 'no-store')
    return await registry.metrics()
  })
  return app
}
