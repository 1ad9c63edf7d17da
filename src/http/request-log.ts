import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** One JSON line per request, after the response: method, path, status, duration, request and trace ids. */
export const requestLogPlugin = fp(async function requestLog (app: FastifyInstance) {
  app.addHook('onResponse', async (req, reply) => {
    const status = reply.statusCode
    const line = {
      method: req.method,
      path: req.url.split('?')[0],
      route: req.routeOptions.url,
      status,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
      trace_id: req.traceId,
      principal: req.principal?.subject,
    }
    if (status >= 500) req.log.error(line, 'request')
    else req.log.info(line, 'request')
  })
}, { name: 'request-log' })
