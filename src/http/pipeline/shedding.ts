import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.ts'
import { CORE_PROBLEMS, problemSlug } from '../../errors.ts'
import { CORE_TRANSLATIONS, problemLanguage } from '../../errors-i18n.ts'
import { loopStalledMs } from '../../loop-stalls.ts'
import { AdmissionQueue } from './admission.ts'
import { instanceOf, PROBLEM_MEDIA_TYPE, RETRY_AFTER_S, unavailable } from '../protocol/problems.ts'
import { isLongLived } from '../protocol/route.ts'
import { apiSecurityHeaders } from './security.ts'
import { genRequestId, parseTraceparent, randomHex } from './tracing.ts'

/** At most one log line per this long about the requests shed. */
const SHED_LOG_EVERY_MS = 1000
/** Probes must tell "overloaded" apart from "dead", so load shedding (and the store's circuit) leaves them alone. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics'])

export function pathOf (url: string): string {
  const i = url.indexOf('?')
  return i === -1 ? url : url.slice(0, i)
}

const IN_FLIGHT = Symbol('inFlight')
const SOCKET_IN_FLIGHT = Symbol('socketInFlight')

/** A connection, and how many of its requests count as in flight (-1 once it has closed: none of them do any longer). */
type TrackedSocket = Socket & { [SOCKET_IN_FLIGHT]?: number }
/** A request, and whether it counts as in flight (true: an injected one; a socket: counted on it). */
type Tracked = FastifyRequest & { [IN_FLIGHT]?: boolean | TrackedSocket }

/**
 * OVERLOAD_MAX_IN_FLIGHT: requests read, not yet answered, their connection still open. What
 * waits on the store (a pool, a lock) is not in the admission queue, which sees the loop only.
 */
class InFlightBound {
  count = 0

  constructor (readonly max: number) {}

  /** A connection accepted: a listener per connection frees its requests' places when it closes. */
  connected (socket: TrackedSocket): void {
    socket[SOCKET_IN_FLIGHT] = 0
    socket.once('close', () => {
      this.count -= socket[SOCKET_IN_FLIGHT]!
      socket[SOCKET_IN_FLIGHT] = -1
    })
  }

  /** Throws 503 when the bound is reached; else counts the request in. */
  admit (req: Tracked, reply: FastifyReply): void {
    // A stream may be refused as it starts, but once open it holds no place in the bound.
    if (isLongLived(req)) return
    if (this.count >= this.max) throw unavailable('SERVICE_UNAVAILABLE', 'The service is overloaded (too many requests in flight). Retry after the time in Retry-After.')
    const socket = req.raw.socket as TrackedSocket | null
    const counted = socket?.[SOCKET_IN_FLIGHT]
    if (counted === -1) return
    this.count++
    if (counted === undefined) {
      // Not from a connection this server accepted (app.inject): its reply says when it closes.
      req[IN_FLIGHT] = true
      reply.raw.once('close', () => { this.release(req) })
    } else {
      req[IN_FLIGHT] = socket!
      socket![SOCKET_IN_FLIGHT] = counted + 1
    }
  }

  /** A request leaves the count when answered, or when its connection closes first. */
  release (req: Tracked): void {
    const counted = req[IN_FLIGHT]
    if (counted === undefined || counted === false) return
    req[IN_FLIGHT] = false
    if (counted === true) {
      this.count--
    } else if (counted[SOCKET_IN_FLIGHT]! > 0) {
      counted[SOCKET_IN_FLIGHT]!--
      this.count--
    }
  }
}

interface Pending { req: IncomingMessage, res: ServerResponse }
type Handler = (req: IncomingMessage, res: ServerResponse) => void

const SHED_DETAIL = 'The service is overloaded (requests wait too long). Retry after the time in Retry-After.'

/**
 * The 503 of a request shed from the queue, written without Fastify (it costs a small part of
 * serving, which is what lets goodput hold at several times the capacity): the problem in the
 * client's language, Retry-After, no-store, the request id and trace echoed or made, and the
 * API's security headers, as every answer carries.
 */
function shedAnswer (security: Record<string, string>): (p: Pending) => void {
  const def = CORE_PROBLEMS.SERVICE_UNAVAILABLE
  const type = `/problems/${problemSlug('SERVICE_UNAVAILABLE')}`
  return ({ req, res }) => {
    const lang = problemLanguage(req.headers['accept-language'])
    const text = lang === 'en' ? { title: def.title, detail: SHED_DETAIL } : CORE_TRANSLATIONS[lang].SERVICE_UNAVAILABLE
    const requestId = genRequestId(req)
    const parent = parseTraceparent(req.headers.traceparent)
    const traceId = parent?.traceId ?? randomHex(16)
    const body = JSON.stringify({
      type, title: text.title, status: 503, detail: text.detail, instance: instanceOf(req.url ?? '/'), code: 'SERVICE_UNAVAILABLE', trace_id: traceId, request_id: requestId,
    })
    res.writeHead(503, {
      ...security,
      'content-type': PROBLEM_MEDIA_TYPE,
      'content-length': Buffer.byteLength(body),
      'content-language': lang,
      'cache-control': 'no-store',
      'retry-after': String(RETRY_AFTER_S),
      'x-request-id': requestId,
      traceparent: `00-${traceId}-${randomHex(8)}-${parent?.flags ?? '01'}`,
    })
    res.end(body)
  }
}

/**
 * Puts the admission queue (src/http/pipeline/admission.ts) in front of Fastify: every request the server
 * reads, probes aside, goes through it, and reaches Fastify's handler when served.
 */
function queueRequests (app: FastifyInstance, config: Pick<Config, 'overloadMaxWaitMs' | 'corsOrigins'>): void {
  const server = app.server
  const handlers = server.listeners('request') as Handler[]
  const dispatch = (req: IncomingMessage, res: ServerResponse) => { for (const h of handlers) h.call(server, req, res) }
  const answer = shedAnswer(apiSecurityHeaders(config.corsOrigins))
  let shed = 0
  let logTimer: NodeJS.Timeout | undefined
  const logShed = () => {
    logTimer = undefined
    app.log.warn({ code: 'SERVICE_UNAVAILABLE', status: 503, shed }, 'service unavailable: requests shed (they waited too long)')
    shed = 0
  }
  const queue = new AdmissionQueue<Pending>(
    { targetMs: config.overloadMaxWaitMs, stalledMs: loopStalledMs },
    ({ req, res }) => { dispatch(req, res) },
    p => {
      answer(p)
      shed++
      logTimer ??= setTimeout(logShed, SHED_LOG_EVERY_MS).unref()
    },
    ({ req }) => req.socket.destroyed
  )
  server.on('connection', () => { queue.accepted() })
  server.removeAllListeners('request')
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (PROBE_PATHS.has(pathOf(req.url ?? '/'))) dispatch(req, res)
    else queue.offer({ req, res })
  })
  app.addHook('onClose', (_app, done) => {
    if (logTimer !== undefined) {
      clearTimeout(logTimer)
      logShed()
    }
    done()
  })
}

/**
 * Load shedding: 503 SERVICE_UNAVAILABLE with Retry-After, at once. Requests read from sockets
 * wait in the admission queue, which sheds by the time they waited in it (OVERLOAD_MAX_WAIT_MS);
 * requests in flight are bounded by OVERLOAD_MAX_IN_FLIGHT. Probes are never shed.
 */
export const sheddingPlugin = fp(async function shedding (app: FastifyInstance, opts: { config: Config }) {
  const { config } = opts
  if (config.overloadMaxWaitMs > 0) queueRequests(app, config)
  if (config.overloadMaxInFlight === 0) return
  const bound = new InFlightBound(config.overloadMaxInFlight)
  app.server.on('connection', (socket: TrackedSocket) => { bound.connected(socket) })
  // Hooks with a callback, not async, like the deadline's: they run on every request.
  app.addHook('onRequest', (req: Tracked, reply, done) => {
    if (PROBE_PATHS.has(pathOf(req.url))) return done()
    try {
      bound.admit(req, reply)
      done()
    } catch (err) {
      done(err as Error)
    }
  })
  app.addHook('onResponse', (req: Tracked, _reply, done) => {
    bound.release(req)
    done()
  })
}, { name: 'shedding', dependencies: ['problems'] })
