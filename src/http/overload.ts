import { randomBytes, randomUUID } from 'node:crypto'
import { type IncomingMessage, type ServerOptions, STATUS_CODES } from 'node:http'
import { Socket } from 'node:net'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { loopStalledMs } from '../loop-stalls.ts'
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
    /**
     * The request's writes are being committed: its deadline no longer applies, nor does a
     * shutdown's 503, since either would say "nothing was changed" of a write about to be
     * committed. Its answer follows the commit (on SQLite, at the end of the loop's turn).
     */
    commitStarted (): void
  }
  interface FastifyInstance {
    /** Answers every request still in flight with 503 and aborts its work (the end of a graceful shutdown). */
    abandonInFlight (): void
  }
  interface FastifyContextConfig {
    /**
     * The answer is a stream that stays open (GET /events): no REQUEST_TIMEOUT_MS deadline, and it
     * does not count against OVERLOAD_MAX_IN_FLIGHT. The route ends its streams on shutdown itself.
     */
    longLived?: boolean
  }
}

/** Whether the request's route answers with a long-lived stream (route config `longLived`). */
function longLived (req: FastifyRequest): boolean {
  return routeOf(req).config.longLived === true
}

/** Request line target (path and query) longer than this: 414. Node's own limit on all headers is 16 KiB. */
export const MAX_URL_LENGTH = 8 * 1024
/** Seconds a client is asked to wait after a 503 of ours. */
export const RETRY_AFTER_S = 5
/** How often under-pressure samples the event-loop delay (its default). */
const SAMPLE_INTERVAL_MS = 1000
/** Probes must tell "overloaded" apart from "dead", so load shedding leaves them alone. */
const EXEMPT_FROM_SHEDDING = new Set(['/healthz', '/readyz', '/metrics'])
const EXEMPT = Symbol('exempt')

/** Whether load shedding leaves the request alone (a probe): decided once, read by every shedding hook. */
function exemptFromShedding (req: FastifyRequest & { [EXEMPT]?: boolean }): boolean {
  return (req[EXEMPT] ??= EXEMPT_FROM_SHEDDING.has(pathOf(req.url)))
}

function pathOf (url: string): string {
  const i = url.indexOf('?')
  return i === -1 ? url : url.slice(0, i)
}

/** How often Node checks connections against headersTimeout and requestTimeout (its default is 30 s). */
const CONNECTIONS_CHECK_INTERVAL_MS = 500

/**
 * Options for Node's HTTP server. Node's read bounds (headers, whole request) end slow or stalled
 * clients; the Host check is done in onRequest below, so that its answer is a problem body.
 */
export function serverOptions (config: Pick<Config, 'headersTimeoutMs'>): ServerOptions {
  return { requireHostHeader: false, headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS }
}

function unavailable (code: 'SERVICE_UNAVAILABLE' | 'REQUEST_TIMEOUT', detail?: string): AppError {
  return new AppError(code, detail, { headers: { 'retry-after': String(RETRY_AFTER_S) } })
}

/** When a request runs out of time (`performance.now()` milliseconds), and its reply. */
interface Deadline { at: number, reply: FastifyReply }

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
  // Every request gets the same timeout, so the Map's insertion order is deadline order: one timer,
  // set for the oldest entry, replaces a timer per request (arming and clearing a timer for each
  // request was ~1.5% of a read's CPU).
  const deadlines = new Map<FastifyRequest, Deadline>()
  let sweeper: NodeJS.Timeout | null = null

  function arm (): void {
    if (sweeper !== null) return
    const first = deadlines.values().next()
    if (first.done === true) return
    sweeper = setTimeout(sweep, Math.max(0, first.value.at - performance.now()))
  }

  /** Forgets a request's deadline; with none left, no timer keeps the process alive. */
  function forget (req: FastifyRequest): void {
    deadlines.delete(req)
    if (deadlines.size === 0 && sweeper !== null) {
      clearTimeout(sweeper)
      sweeper = null
    }
  }

  function sweep (): void {
    sweeper = null
    const now = performance.now()
    for (const [req, d] of deadlines) {
      if (d.at > now) break
      expire(req, d.reply)
    }
    arm()
  }

  app.decorateRequest('commitStarted', function (this: FastifyRequest) { forget(this) })
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

  shedByWait(app, opts.config)
  handleNodeRequests(app)

  if (opts.config.overloadMaxEventLoopDelayMs > 0) {
    // The first samples measure start-up (loading modules, migrating), not load: shed nothing
    // until a whole sample has been taken after the app became ready.
    let sheddingFrom = Infinity
    app.addHook('onReady', async () => { sheddingFrom = performance.now() + 2 * SAMPLE_INTERVAL_MS })
    // under-pressure samples the loop's delay. Registered in a scope of its own that holds no
    // route, its onRequest hook runs on no request (it built Fastify's routeOptions object anew
    // on every request, ~3% of a read); this plugin's own hook asks isUnderPressure() instead.
    let underPressureNow: () => boolean = () => false
    await app.register(async function pressureSampler (scope: FastifyInstance) {
      await scope.register(underPressure, { maxEventLoopDelay: opts.config.overloadMaxEventLoopDelayMs, sampleInterval: SAMPLE_INTERVAL_MS })
      underPressureNow = () => scope.isUnderPressure()
    })
    app.addHook('onRequest', (req, _reply, done) => {
      if (underPressureNow() && performance.now() >= sheddingFrom && !exemptFromShedding(req)) {
        done(unavailable('SERVICE_UNAVAILABLE', 'The service is overloaded. Retry after the time in Retry-After.'))
      } else {
        done()
      }
    })
  }

  function expire (req: FastifyRequest, reply: FastifyReply, err = unavailable('REQUEST_TIMEOUT')): void {
    forget(req)
    if (reply.sent || reply.raw.headersSent) return
    // Hijacked and written at once: the abandoned work may still call reply.code(), send() or
    // throw, and none of that may touch this answer (Fastify drops sends on a hijacked reply).
    reply.hijack()
    const kept: Record<string, string | number | string[]> = {}
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined && !(SUCCESS_ONLY_HEADERS as readonly string[]).includes(name)) kept[name] = value
    }
    const body = JSON.stringify(buildProblem(req, err))
    // A body still arriving would keep the connection busy (Node reads and discards it to reuse the
    // connection): closing is the only way to stop a client that trickles its upload.
    const close: Record<string, string> = req.raw.complete ? {} : { connection: 'close' }
    reply.raw.writeHead(err.status, { ...kept, ...problemHeaders(req, err), ...close, 'content-length': Buffer.byteLength(body) })
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
    // Not req.signal: Node closes the request stream once its body is read, long before the answer.
    // A client that goes away is caught by onRequestAbort below.
    if (longLived(req)) return done()
    deadlines.set(req, { at: performance.now() + timeoutMs, reply })
    arm()
    done()
  })
  // Once an answer is on its way (in onSend), the deadline no longer applies: a second answer
  // racing the first would write the headers twice. This is the first onSend hook, and nothing
  // between serialising and onSend waits, so the serialisation needs no hook of its own (and
  // without any preSerialization hook Fastify serialises without the hook runner).
  app.addHook('onSend', (req, _reply, payload, done) => {
    forget(req)
    done(null, payload)
  })
  app.addHook('onResponse', (req, _reply, done) => {
    forget(req)
    done()
  })
  app.addHook('onRequestAbort', (req, done) => {
    if (deadlines.has(req)) {
      forget(req)
      abandon(req, new Error('the client closed the connection'))
    }
    done()
  })
}, { name: 'overload', dependencies: ['problems'] })

const IN_FLIGHT = Symbol('inFlight')
const BODY_READ = Symbol('bodyRead')
const WAITED = Symbol('waited')
const ANSWERED = Symbol('answered')
const BURST = Symbol('burst')
const STALLED_AT = Symbol('stalledAt')
const SOCKET_IN_FLIGHT = Symbol('socketInFlight')
type Tracked = FastifyRequest & { [IN_FLIGHT]?: boolean | TrackedSocket, [BODY_READ]?: number, [WAITED]?: number, [EXEMPT]?: boolean, [STALLED_AT]?: number }
/**
 * A connection: whether it has had an answer (it is past the accept queue), the burst it came in
 * (which run of turns that took a connection from the accept queue accepted it), and how many of
 * its requests count as in flight (-1 once it has closed: none of them do any longer).
 */
type TrackedSocket = Socket & { [ANSWERED]?: boolean, [BURST]?: number, [SOCKET_IN_FLIGHT]?: number }

/**
 * Load shedding by what a client feels. When the loop is saturated the wait is in the sockets
 * (and in the kernel's accept queue, from which libuv takes one connection per turn of the loop),
 * where no event-loop delay shows it. What a request has waited is bounded by when its bytes can
 * have arrived at the earliest:
 * - on a connection that has had an answer, after the end of the turn before last that handled
 *   requests: a socket that was readable when the loop last polled was read in that turn;
 * - on a new connection, after the last poll that found the kernel's accept queue empty: a turn
 *   that accepted no connection polled an empty queue, so a connection accepted later arrived
 *   after it (at the earliest, the end of the turn before it). While a flood keeps the queue full,
 *   every turn accepts one and the bound stays where the flood began; one new client among a
 *   steady load on kept-alive connections finds it a few turns old. Not counted: the share of
 *   those turns spent on later requests of connections accepted since the queue was last empty
 *   (the same burst). A client pool that opens its connections at once is accepted one per turn,
 *   each turn serving every connection of the pool already in, so its last connection waits
 *   ~C²/2 requests to be accepted though the pool's first requests are C requests of work; a flood
 *   of one-request connections, or of new connections beside kept-alive load, still counts whole;
 * - and never before the last moment the loop waited idle for I/O (nothing was pending then).
 * Past OVERLOAD_MAX_WAIT_MS (checked again before the handler, body read time excluded) the
 * request is answered 503 at once, which costs far less than serving it, so the queues drain and
 * answered requests stay fast. Steady load on kept-alive connections whose turns stay short (a
 * benchmark's closed loop) is therefore never shed, although the loop is never idle; a flood of
 * new connections, or one burst read in a long turn, is. So are the requests queued behind one
 * turn longer than the bound (a stall, not a standing queue): a rule that waited for the queue to
 * prove it stands served requests far beyond the bound under real overload (docs/reliability.md).
 * Time the loop spent blocked in a disk sync (src/loop-stalls.ts: SQLite's COMMIT and the WAL
 * checkpoints it runs) is left out of every wait: shedding cannot shorten it.
 * OVERLOAD_MAX_IN_FLIGHT bounds requests waiting on the store (a pool, a lock) the same way.
 */
function shedByWait (app: FastifyInstance, config: Pick<Config, 'overloadMaxWaitMs' | 'overloadMaxInFlight'>): void {
  const maxWait = config.overloadMaxWaitMs
  const maxInFlight = config.overloadMaxInFlight
  if (maxWait === 0 && maxInFlight === 0) return
  let busySince = -1
  let idleSeen = 0
  // Whether this turn's first request has read the loop's idle time: it only grows while the loop
  // waits for I/O, which it does not do within a turn, so one read per turn is enough.
  let idleRead = false
  let inFlight = 0
  // The ends of the last two turns of the loop that handled a request or an answer: an immediate
  // armed by that work runs in the turn's check phase, right after its I/O callbacks.
  const turnEnds = [-1, -1]
  let armed = false
  // Whether the current turn took a connection from the accept queue, and when the queue was last
  // seen empty (the end of the turn before the last turn that took none).
  let accepted = false
  let acceptQueueEmpty = -1
  // The burst: the connections accepted since the queue was last seen empty. `burstOwn` is the
  // time since then spent on the burst's own later requests, apportioned per turn by the count of
  // requests the turn started (wall times of concurrent requests overlap; counts do not).
  let burst = 0
  let burstOwn = 0
  let turnRequests = 0
  let turnBurstRequests = 0
  // The loop's blocking disk syncs (src/loop-stalls.ts) as they stood at those two turn ends and
  // when the accept queue was last seen empty: a stall is not a queue, so waits leave it out.
  const stalledAt = [0, 0]
  let stalledAtQueueEmpty = 0
  const endTurn = () => {
    armed = false
    idleRead = false
    const end = performance.now()
    if (turnBurstRequests > 0) burstOwn += (end - Math.max(turnEnds[1]!, busySince)) * turnBurstRequests / turnRequests
    turnRequests = 0
    turnBurstRequests = 0
    if (!accepted) {
      acceptQueueEmpty = turnEnds[1]!
      stalledAtQueueEmpty = stalledAt[1]!
      burst++
      burstOwn = 0
    }
    accepted = false
    turnEnds[0] = turnEnds[1]!
    turnEnds[1] = end
    stalledAt[0] = stalledAt[1]!
    stalledAt[1] = loopStalledMs()
  }
  /**
   * The time since moment `from` (or since the loop's last idle moment, if later), less the disk
   * syncs since then: `stalled` now, `stalledThen` at `from` (a stall is not a queue).
   */
  const waitedSince = (now: number, stalled: number, from: number, stalledThen: number): number =>
    busySince <= from ? now - from - (stalled - stalledThen) : now - busySince
  const markTurn = () => {
    if (armed) return
    armed = true
    setImmediate(endTurn)
  }
  // A request leaves the count when answered (onResponse), or when its connection closes first:
  // a listener per connection, not one per request (that was ~2% of a read's instructions).
  const release = (req: Tracked) => {
    const counted = req[IN_FLIGHT]
    if (counted === undefined || counted === false) return
    req[IN_FLIGHT] = false
    if (counted === true) {
      inFlight--
    } else if (counted[SOCKET_IN_FLIGHT]! > 0) {
      counted[SOCKET_IN_FLIGHT]!--
      inFlight--
    }
  }
  const checkInFlight = (req: Tracked, reply: FastifyReply): void => {
    if (maxInFlight > 0 && inFlight >= maxInFlight) throw overloaded('too many requests in flight')
    const socket = req.raw.socket as TrackedSocket | null
    const counted = socket?.[SOCKET_IN_FLIGHT]
    if (counted === -1) return
    inFlight++
    if (counted === undefined) {
      // Not from a connection this server accepted (app.inject): its reply says when it closes.
      req[IN_FLIGHT] = true
      reply.raw.once('close', () => { release(req) })
    } else {
      req[IN_FLIGHT] = socket!
      socket![SOCKET_IN_FLIGHT] = counted + 1
    }
  }
  const overloaded = (why: string) => unavailable('SERVICE_UNAVAILABLE', `The service is overloaded (${why}). Retry after the time in Retry-After.`)

  app.server.on('connection', (socket: TrackedSocket) => {
    socket[SOCKET_IN_FLIGHT] = 0
    socket.once('close', () => {
      inFlight -= socket[SOCKET_IN_FLIGHT]!
      socket[SOCKET_IN_FLIGHT] = -1
    })
    if (maxWait === 0) return
    accepted = true
    socket[BURST] = burst
    markTurn()
  })
  // Hooks with a callback, not async, like the deadline's: they run on every request.
  app.addHook('onRequest', (req: Tracked, reply, done) => {
    const socket = req.raw.socket as TrackedSocket
    // Requests not read from a socket (app.inject) waited in no socket.
    const fromSocket = socket instanceof Socket
    if (fromSocket) {
      const now = performance.now()
      if (maxWait > 0) {
        // The loop's idle time grows only while it waits for I/O with nothing to do.
        if (!idleRead) {
          idleRead = true
          const idle = performance.eventLoopUtilization().idle
          if (busySince < 0 || idle > idleSeen) {
            busySince = now
            idleSeen = idle
          }
        }
        markTurn()
        const stalled = loopStalledMs()
        req[STALLED_AT] = stalled
        const sinceTurn = waitedSince(now, stalled, turnEnds[0]!, stalledAt[0]!)
        turnRequests++
        if (socket[ANSWERED] === true) {
          req[WAITED] = sinceTurn
          if (socket[BURST] === burst) turnBurstRequests++
        } else {
          req[WAITED] = Math.max(sinceTurn, waitedSince(now, stalled, acceptQueueEmpty, stalledAtQueueEmpty) - burstOwn)
        }
      }
    }
    try {
      if (exemptFromShedding(req)) return done()
      if (fromSocket && maxWait > 0 && req[WAITED]! > maxWait) throw overloaded('requests wait too long')
      // A stream may be refused when it starts, but once open it holds no place in the bound.
      if (!longLived(req)) checkInFlight(req, reply)
      done()
    } catch (err) {
      done(err as Error)
    }
  })
  app.addHook('onResponse', (req: Tracked, _reply, done) => {
    release(req)
    const socket: unknown = req.raw.socket
    if (maxWait > 0 && socket instanceof Socket) {
      (socket as TrackedSocket)[ANSWERED] = true
      markTurn()
    }
    done()
  })
  if (maxWait === 0) return
  app.addHook('preParsing', (req: Tracked, _reply, payload, done) => {
    req[BODY_READ] = performance.now()
    done(null, payload)
  })
  app.addHook('preValidation', (req: Tracked, _reply, done) => {
    if (req[BODY_READ] !== undefined) req[BODY_READ] = performance.now() - req[BODY_READ]
    done()
  })
  app.addHook('preHandler', (req: Tracked, reply, done) => {
    const stalls = loopStalledMs() - (req[STALLED_AT] ?? 0)
    if (!exemptFromShedding(req) && (req[WAITED] ?? 0) + reply.elapsedTime - (req[BODY_READ] ?? 0) - stalls > maxWait) done(overloaded('requests wait too long'))
    else done()
  })
}

interface RawProblem { status: number, headers: Record<string, string>, head: string, body: string }

/** A problem written by hand, for answers given where Fastify has no request (its trace is new). */
function rawProblem (code: ProblemCode, instance: string, detail?: string, headers: Record<string, string> = {}): RawProblem {
  const p = PROBLEMS[code]
  const problem: Problem = {
    type: `/problems/${problemSlug(code)}`,
    title: p.title,
    status: p.status,
    detail: detail ?? p.detail,
    instance,
    code,
    trace_id: randomBytes(16).toString('hex'),
    request_id: randomUUID(),
  }
  const body = JSON.stringify(problem)
  const fields: Record<string, string> = {
    'Content-Type': PROBLEM_MEDIA_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    'Content-Language': 'en',
    'Cache-Control': 'no-store',
    'X-Request-Id': problem.request_id,
    traceparent: `00-${problem.trace_id}-${randomBytes(8).toString('hex')}-01`,
    ...headers,
    Connection: 'close',
  }
  const head = `HTTP/1.1 ${p.status} ${STATUS_CODES[p.status]}\r\n${Object.entries(fields).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`
  return { status: p.status, headers: fields, head, body }
}

/** The path of a request target, when it is a plain origin-form path; else `/`. */
function instanceOf (target: string): string {
  return /^(\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,200})/.exec(target)?.[1] ?? '/'
}

/**
 * Requests Node answers itself unless told otherwise: an `Expect` other than 100-continue (Node
 * would send a bare 417) and CONNECT (Node would close the connection without a word). CONNECT
 * goes through the app like any request, so it gets what every other method gets on that path
 * (405 with Allow, 404), then the connection is closed: this service tunnels nothing.
 */
function handleNodeRequests (app: FastifyInstance): void {
  app.server.on('checkExpectation', (req: IncomingMessage, res) => {
    const p = rawProblem('EXPECTATION_FAILED', instanceOf(req.url ?? '/'), `Expect: ${String(req.headers.expect).slice(0, 100)} cannot be met; only 100-continue is supported.`)
    res.writeHead(p.status, p.headers)
    res.end(p.body)
  })
  app.server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => { socket.destroy() })
    const headers = { ...req.headers }
    app.inject({ method: 'CONNECT' as never, url: instanceOf(req.url ?? '/'), headers, remoteAddress: req.socket.remoteAddress ?? '127.0.0.1' })
      .then(res => {
        const kept = Object.entries(res.headers).filter(([k]) => !['connection', 'transfer-encoding', 'content-length', 'keep-alive', 'date'].includes(k))
        const lines = kept.flatMap(([k, v]) => [v].flat().map(x => `${k}: ${String(x)}\r\n`)).join('')
        socket.write(`HTTP/1.1 ${res.statusCode} ${STATUS_CODES[res.statusCode] ?? ''}\r\n${lines}content-length: ${res.rawPayload.length}\r\nconnection: close\r\n\r\n`)
        socket.end(res.rawPayload, () => socket.destroy())
      }, () => { socket.destroy() })
  })
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
  const p = rawProblem(code, instanceOf(target), detail)
  socket.end(p.head + p.body, () => socket.destroy())
}
