import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { routeOf } from '../protocol/route.ts'

function pathOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/** One JSON line per request, after the response: method, path, status, duration, request and trace ids. */
export const requestLogPlugin = fp(async function requestLog (app: FastifyInstance) {
  app.addHook('onResponse', (req, reply, done) => {
    const status = reply.statusCode
    // One object, and no level check, child logger or string work beyond what pino needs.
    const line = {
      method: req.method,
      path: pathOf(req.url),
      route: routeOf(req).url,
      status,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
      trace_id: req.traceId,
      principal: req.principal?.subject,
    }
    if (status >= 500) req.log.error(line, 'request')
    else req.log.info(line, 'request')
    done()
  })
}, { name: 'request-log' })
