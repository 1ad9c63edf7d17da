import type { ServerOptions } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import type { ProblemCode } from '../../errors.ts'
import { rawProblem } from '../protocol/problems.ts'

/** How often Node checks connections against headersTimeout and requestTimeout (its default is 30 s). */
const CONNECTIONS_CHECK_INTERVAL_MS = 500

/**
 * Options for Node's HTTP server. Node's read bounds (headers, whole request) end slow or stalled
 * clients; the Host check is done in onRequest (src/http/pipeline/request-target.ts), so that its answer is
 * a problem body.
 */
export function serverOptions (config: Pick<Config, 'headersTimeoutMs'>): ServerOptions {
  return { requireHostHeader: false, headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS }
}

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request (headers over
 * `maxHeaderSize`, a broken request line, headers or body not received in time) with a problem
 * body instead of Fastify's plain JSON, then closes the connection.
 * Never logs the error object: its `rawPacket` holds the request bytes, Authorization included.
 */
export function clientErrorHandler (this: FastifyInstance, err: Error & { code?: string, rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  this.log.debug({ code: err.code }, 'client error')
  // Nothing can be said once an answer has begun: a second one would corrupt the stream.
  if (!socket.writable || socket.bytesWritten > 0) {
    socket.destroy()
    return
  }
  const code: ProblemCode = err.code === 'HPE_HEADER_OVERFLOW'
    ? 'HEADERS_TOO_LARGE'
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'CLIENT_TIMEOUT' : 'BAD_REQUEST'
  const requestLine = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1', 0, 512).split('\r\n', 1)[0] ?? '' : ''
  const target = /^[A-Z]{3,10} (\S{1,300})/.exec(requestLine)?.[1] ?? '/'
  const detail = code === 'HEADERS_TOO_LARGE' ? 'The request line and headers together exceed 16 KiB.' : undefined
  const p = rawProblem(code, target, detail)
  socket.end(p.head + p.body, () => socket.destroy())
}
