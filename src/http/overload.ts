import { randomBytes, randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { AppError, PROBLEMS, type ProblemCode, problemSlug } from '../errors.ts'
import { buildProblem, PROBLEM_MEDIA_TYPE, type Problem, problemHeaders, SUCCESS_ONLY_HEADERS } from './problems.ts'
import { routeOf } from './route.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Aborted once nobody waits for the answer: the request ran out of time (REQUEST_TIMEOUT_MS,
     * and a 503 has been sent) or the client went away. Long work should observe it and stop.
     */
    abandoned: AbortSignal
    /** Internal to this plugin: made on the first read of `abandoned` (most requests never read it). */
    abandonController: AbortController | null
    /** Internal to this plugin: why the request was abandoned, once it was. */
    abandonReason: Error | null
  }
  interface FastifyInstance {
    /** Answers every request still in flight with 503 and aborts its work (the end of a graceful shutdown). */
    abandonInFlight (): void
  }
}

/** Request line target (path and query) longer than this: 414. Node's own limit on all headers is 16 KiB. */
export const MAX_URL_LENGTH = 8 * 1024
/** Seconds a client is asked to wait after a 503 of ours. */
export const RETRY_AFTER_S = 5
/** How often under-pressure samples the event-loop delay (its default). */
const SAMPLE_INTERVAL_MS = 1000
/** Probes must tell "overloaded" apart from "dead", so load shedding leaves them alone. */
const EXEMPT_FROM_SHEDDING = new Set(['/healthz', '/readyz', '/metrics'])

function pathOf (url: string): string {
  const i = url.indexOf('?')
  return i === -1 ? url : url.slice(0, i)
}

function unavailable (code: 'SERVICE_UNAVAILABLE' | 'REQUEST_TIMEOUT', detail?: string): AppError {
  return new AppError(code, detail, { headers: { 'retry-after': String(RETRY_AFTER_S) } })
}

interface Deadline { timer: NodeJS.Timeout, reply: FastifyReply }

/** Marks a request abandoned: its `abandoned` signal aborts now, or aborted when first read. */
function abandon (req: FastifyRequest, reason: Error): void {
  req.abandonReason = reason
  req.abandonController?.abort(reason)
}

/**
 * Contract §7: an over-long URL is refused before any work (414); under event-loop pressure,
 * requests are shed with 503 SERVICE_UNAVAILABLE; a request not answered within
 * REQUEST_TIMEOUT_MS gets 503 REQUEST_TIMEOUT and `req.abandoned` aborts. Every answer is a problem
 * with Retry-After, and a late answer from the abandoned work is dropped by Fastify (logged, no crash).
 */
export const overloadPlugin = fp(async function overload (app: FastifyInstance, opts: { config: Config }) {
  const timeoutMs = opts.config.requestTimeoutMs
  // A Map, not a WeakMap: shutdown must reach every request still in flight. Entries leave on answer.
  const deadlines = new Map<FastifyRequest, Deadline>()

  app.decorateRequest('abandonController', null)
  app.decorateRequest('abandonReason', null)
  // An AbortController per request was a measurable share of a read's cost, for a signal that
  // only writes look at: it is made when first read, already aborted if the request was.
  app.decorateRequest('abandoned', {
    getter (this: FastifyRequest): AbortSignal {
      if (this.abandonController === null) {
        this.abandonController = new AbortController()
        if (this.abandonReason !== null) this.abandonController.abort(this.abandonReason)
      }
      return this.abandonController.signal
    },
  })

  if (opts.config.overloadMaxEventLoopDelayMs > 0) {
    // The first samples measure start-up (loading modules, migrating), not load: shed nothing
    // until a whole sample has been taken after the app became ready.
    let sheddingFrom = Infinity
    app.addHook('onReady', async () => { sheddingFrom = performance.now() + 2 * SAMPLE_INTERVAL_MS })
    await app.register(underPressure, {
      maxEventLoopDelay: opts.config.overloadMaxEventLoopDelayMs,
      sampleInterval: SAMPLE_INTERVAL_MS,
      // A rejected promise goes to the error handler, so the answer is our problem body.
      pressureHandler: async (req: FastifyRequest) => {
        if (EXEMPT_FROM_SHEDDING.has(pathOf(req.url)) || performance.now() < sheddingFrom) return
        throw unavailable('SERVICE_UNAVAILABLE', 'The service is overloaded. Retry after the time in Retry-After.')
      },
    })
  }

  function settle (req: FastifyRequest): void {
    const d = deadlines.get(req)
    if (d === undefined) return
    clearTimeout(d.timer)
    deadlines.delete(req)
  }

  function expire (req: FastifyRequest, reply: FastifyReply, err = unavailable('REQUEST_TIMEOUT')): void {
    clearTimeout(deadlines.get(req)?.timer)
    deadlines.delete(req)
    if (reply.sent || reply.raw.headersSent) return
    // Hijacked and written at once: the abandoned work may still call reply.code(), send() or
    // throw, and none of that may touch this answer (Fastify drops sends on a hijacked reply).
    reply.hijack()
    const kept: Record<string, string | number | string[]> = {}
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined && !(SUCCESS_ONLY_HEADERS as readonly string[]).includes(name)) kept[name] = value
    }
    const body = JSON.stringify(buildProblem(req, err))
    reply.raw.writeHead(err.status, { ...kept, ...problemHeaders(req, err), 'content-length': Buffer.byteLength(body) })
    reply.raw.end(body)
    req.log.warn({ timeout_ms: timeoutMs, route: routeOf(req).url, code: err.code }, 'request abandoned')
    abandon(req, err)
  }

  // Shutdown's last step: whatever is still running gets 503 now and commits nothing.
  app.decorate('abandonInFlight', () => {
    for (const [req, d] of [...deadlines]) {
      expire(req, d.reply, unavailable('SERVICE_UNAVAILABLE', 'The instance is shutting down and could not finish this request in time; nothing was changed. Retry.'))
    }
  })

  // Hooks with a callback, not async: each async hook costs a promise and a microtask per request.
  app.addHook('onRequest', (req, reply, done) => {
    if ((req.raw.url ?? '').length > MAX_URL_LENGTH) {
      done(new AppError('URI_TOO_LONG', `The request target is longer than ${MAX_URL_LENGTH} characters.`))
      return
    }
    // Not req.signal: Node closes the request stream once its body is read, long before the answer.
    // A client that goes away is caught by onRequestAbort below.
    deadlines.set(req, { timer: setTimeout(expire, timeoutMs, req, reply), reply })
    done()
  })
  // Once an answer is on its way (serialising or in onSend), the deadline no longer applies:
  // a second answer racing the first would write the headers twice.
  app.addHook('preSerialization', (req, _reply, payload, done) => {
    settle(req)
    done(null, payload)
  })
  app.addHook('onSend', (req, _reply, payload, done) => {
    settle(req)
    done(null, payload)
  })
  app.addHook('onResponse', (req, _reply, done) => {
    settle(req)
    done()
  })
  app.addHook('onRequestAbort', (req, done) => {
    if (deadlines.has(req)) {
      settle(req)
      abandon(req, new Error('the client closed the connection'))
    }
    done()
  })
}, { name: 'overload', dependencies: ['problems'] })

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request (headers over
 * `maxHeaderSize`, a broken request line) with a problem body instead of Fastify's plain JSON.
 * Never logs the error object: its `rawPacket` holds the request bytes, Authorization included.
 */
export function clientErrorHandler (this: FastifyInstance, err: Error & { code?: string, rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  this.log.debug({ code: err.code }, 'client error')
  if (!socket.writable) {
    socket.destroy()
    return
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    // The client did not finish sending its request in time; there is nobody to read a body.
    socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', () => socket.destroy())
    return
  }
  const code: ProblemCode = err.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'BAD_REQUEST'
  const p = PROBLEMS[code]
  const requestLine = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1', 0, 512).split('\r\n', 1)[0] ?? '' : ''
  const target = /^[A-Z]{3,10} (\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,200})/.exec(requestLine)?.[1] ?? '/'
  const problem: Problem = {
    type: `/problems/${problemSlug(code)}`,
    title: p.title,
    status: p.status,
    detail: code === 'HEADERS_TOO_LARGE' ? 'The request line and headers together exceed 16 KiB.' : p.detail,
    instance: target,
    code,
    trace_id: randomBytes(16).toString('hex'),
    request_id: randomUUID(),
  }
  const body = JSON.stringify(problem)
  socket.end(
    `HTTP/1.1 ${p.status} ${STATUS_CODES[p.status]}\r\n` +
    `Content-Type: ${PROBLEM_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    // The request could not be parsed, so its own traceparent is unknown: a new trace is started.
    `Content-Language: en\r\nCache-Control: no-store\r\nX-Request-Id: ${problem.request_id}\r\n` +
    `traceparent: 00-${problem.trace_id}-${randomBytes(8).toString('hex')}-01\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy()
  )
}
