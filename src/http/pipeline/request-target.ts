import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../../errors.ts'

/** Request line target (path and query) longer than this: 414. Node's own limit on all headers is 16 KiB. */
export const MAX_URL_LENGTH = 8 * 1024

/** An over-long URL is refused before any work (414); RFC 9112 §3.2's Host rule (400). */
export const requestTargetPlugin = fp(async function requestTarget (app: FastifyInstance) {
  app.addHook('onRequest', (req, _reply, done) => {
    if ((req.raw.url ?? '').length > MAX_URL_LENGTH) {
      done(new AppError('URI_TOO_LONG', `The request target is longer than ${MAX_URL_LENGTH} characters.`))
      return
    }
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) {
      done(new AppError('BAD_REQUEST', 'An HTTP/1.1 request must carry a Host header.'))
      return
    }
    done()
  })
}, { name: 'request-target', dependencies: ['problems'] })
