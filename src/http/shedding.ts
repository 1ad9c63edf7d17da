import type { IncomingMessage, ServerResponse } from 'node:http'
import { type AddressInfo, Socket } from 'node:net'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { CORE_PROBLEMS, problemSlug } from '../errors.ts'
import { CORE_TRANSLATIONS, problemLanguage } from '../errors-i18n.ts'
import { loopStalledMs } from '../loop-stalls.ts'
import { acceptQueueReader } from './accept-queue.ts'
import { AdmissionQueue } from './admission.ts'
import { instanceOf, PROBLEM_MEDIA_TYPE, RETRY_AFTER_S, unavailable } from './problems.ts'
import { isLongLived } from './route.ts'
import { apiSecurityHeaders } from './security.ts'
import { genRequestId, parseTraceparent, randomHex } from './tracing.ts'

/** How often under-pressure samples the event-loop delay (its default). */
const SAMPLE_INTERVAL_MS = 1000
/**
 * How often the accept queue is looked at during a turn that serves a burst (each look reads the
 * kernel's socket table, ~0.7 ms): a connection's wait is undercounted by at most this much more
 * than the request in hand.
 */
const LOOK_EVERY_MS = 25
/**
 * How long after a burst's first connection the connections that join it still count as its
 * opening batch, opened at once with it (a client pool; wrk opens its 64 within a millisecond).
 */
const OPENING_MS = 20
/**
 * A look that finds at least POOL_MIN connections joined since the last, at POOL_PER_MS a
 * millisecond or more, finds a pool opened at once: they keep the discount too (an open loop at
 * twice the capacity opens a few a turn).
 */
const POOL_MIN = 8
const POOL_PER_MS = 0.5
/**
 * How long waits over OVERLOAD_MAX_WAIT_MS must last before they are overload, not a stall
 * (src/http/admission.ts); CoDel's interval for a network queue is 100 ms too.
 */
const OVERLOAD_INTERVAL_MS = 100
/**
 * The work served in one turn of the loop before the queue lets it poll its sockets again: libuv
 * accepts one connection per turn, so this bounds how fast new connections get in under load.
 */
const SLICE_MS = 2
/** At most one log line per this long about the requests shed (each used to log two). */
const SHED_LOG_EVERY_MS = 1000
/** Probes must tell "overloaded" apart from "dead", so load shedding (and the store's circuit) leaves them alone. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics'])

const EXEMPT = Symbol('exempt')
const IN_FLIGHT = Symbol('inFlight')
const BODY_READ = Symbol('bodyRead')
const WAITED = Symbol('waited')
const STALLED_AT = Symbol('stalledAt')
const ANSWERED = Symbol('answered')
const BURST = Symbol('burst')
const SOCKET_IN_FLIGHT = Symbol('socketInFlight')
const SEEN_AT = Symbol('seenAt')
const SEEN_STALLED = Symbol('seenStalled')
const ACCEPTED_IN = Symbol('acceptedIn')

/** A request as shedding sees it: what it waited, whether it counts as in flight, and where. */
type Tracked = FastifyRequest & {
  [IN_FLIGHT]?: boolean | TrackedSocket
  [BODY_READ]?: number
  [WAITED]?: number
  [EXEMPT]?: boolean
  [STALLED_AT]?: number
}
/**
 * A connection: whether it has had an answer (it is past the accept queue), the burst it came in
 * (which run of turns that took a connection from the accept queue accepted it), and how many of
 * its requests count as in flight (-1 once it has closed: none of them do any longer).
 */
type TrackedSocket = Socket & {
  [ANSWERED]?: boolean
  [BURST]?: number
  [SOCKET_IN_FLIGHT]?: number
  /** When the accept queue was first seen holding this connection, and the loop's disk syncs then. */
  [SEEN_AT]?: number
  [SEEN_STALLED]?: number
  /** The turn (of those counted) in which it was accepted. */
  [ACCEPTED_IN]?: number
}

/**
 * A look at the accept queue: every connection up to the `reach`-th accepted was in it `at` that
 * moment; `opening` when the look was part of its burst's opening (the connections first seen by
 * it came with the burst's first).
 */
interface Sighting { reach: number, at: number, stalled: number, opening: boolean }

/** Whether load shedding leaves the request alone (a probe): decided once, read by every shedding hook. */
function exemptFromShedding (req: Tracked): boolean {
  return (req[EXEMPT] ??= PROBE_PATHS.has(pathOf(req.url)))
}

export function pathOf (url: string): string {
  const i = url.indexOf('?')
  return i === -1 ? url : url.slice(0, i)
}

function overloaded (why: string) {
  return unavailable('SERVICE_UNAVAILABLE', `The service is overloaded (${why}). Retry after the time in Retry-After.`)
}

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
 *   of one-request connections, or of new connections beside kept-alive load, still counts whole.
 *   That discount is for a pool opened at once only: where the kernel's accept queue can be read
 *   (Linux, src/http/accept-queue.ts), the queue is looked at while a burst's own connections come
 *   back for more, so each connection is known to have waited at least since the first look that
 *   counted it. Connections that came with the burst's first (its opening: its second accept and
 *   any within OPENING_MS), or many at once (a pool opened mid-burst), keep the discount; the rest,
 *   connections that kept arriving one by one while the queue stood (an open loop's), count from
 *   that look: without it they were read up to 2 s after they arrived and served as if they had
 *   waited under the bound;
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
export class LoadShedder {
  /** Requests counted as in flight: read, not yet answered, their connection still open. */
  inFlight = 0
  /** When the loop last came out of waiting idle for I/O (-1: never seen yet). */
  private busySince = -1
  /** The loop's idle time (eventLoopUtilization) when busySince was last moved. */
  private idleSeen = 0
  /**
   * Whether this turn's first request has read the loop's idle time: it only grows while the loop
   * waits for I/O, which it does not do within a turn, so one read per turn is enough.
   */
  private idleRead = false
  /**
   * The ends of the last two turns of the loop that handled a request or an answer: an immediate
   * armed by that work runs in the turn's check phase, right after its I/O callbacks.
   */
  private turnBeforeLastEnd = -1
  private lastTurnEnd = -1
  /** Whether an immediate is armed to mark the end of the current turn. */
  private turnMarked = false
  /** Whether the current turn took a connection from the accept queue. */
  private accepted = false
  /** When the accept queue was last seen empty: the end of the turn before the last turn that took none. */
  private acceptQueueEmptyAt = -1
  /** The burst: which run of accepting turns new connections belong to (they were accepted since the queue was last empty). */
  private burst = 0
  /**
   * The time since the accept queue was last empty spent on the burst's own later requests,
   * apportioned per turn by the count of requests the turn started (wall times of concurrent
   * requests overlap; counts do not).
   */
  private burstOwnMs = 0
  private turnRequests = 0
  private turnBurstRequests = 0
  /**
   * The loop's blocking disk syncs (src/loop-stalls.ts) as they stood at the two turn ends and
   * when the accept queue was last seen empty: a stall is not a queue, so waits leave it out.
   */
  private stalledAtTurnBeforeLast = 0
  private stalledAtLastTurn = 0
  private stalledAtQueueEmpty = 0
  /** Turns of the loop counted (those that ended with endTurn). */
  private turns = 0
  /** Connections accepted so far: the index of the last one. */
  private accepts = 0
  /**
   * The length of the kernel's accept queue now (src/http/accept-queue.ts), where it can be read:
   * looked at on each accept while a burst's own connections come back for more requests.
   */
  queueLength: (() => number | undefined) | undefined
  /** This burst's looks at the accept queue, by increasing reach. */
  private sightings: Sighting[] = []
  /** How many connections this burst has accepted, and when it accepted its first. */
  private burstAccepts = 0
  private burstStartedAt = 0
  /** When the accept queue was last looked at, and the reach it saw then. */
  private lookedAt = -Infinity
  private lookedReach = 0

  constructor (readonly maxWaitMs: number, readonly maxInFlight: number) {}

  private readonly endTurn = (): void => {
    this.turnMarked = false
    this.idleRead = false
    const end = performance.now()
    if (this.turnBurstRequests > 0) {
      this.burstOwnMs += (end - Math.max(this.lastTurnEnd, this.busySince)) * this.turnBurstRequests / this.turnRequests
    }
    this.turnRequests = 0
    this.turnBurstRequests = 0
    if (!this.accepted) {
      this.acceptQueueEmptyAt = this.lastTurnEnd
      this.stalledAtQueueEmpty = this.stalledAtLastTurn
      this.burst++
      this.burstOwnMs = 0
      this.burstAccepts = 0
      if (this.sightings.length > 0) this.sightings = []
    }
    this.turns++
    this.accepted = false
    this.turnBeforeLastEnd = this.lastTurnEnd
    this.lastTurnEnd = end
    this.stalledAtTurnBeforeLast = this.stalledAtLastTurn
    this.stalledAtLastTurn = loopStalledMs()
  }

  /** Arms the end of this turn of the loop (once per turn). */
  private markTurn (): void {
    if (this.turnMarked) return
    this.turnMarked = true
    setImmediate(this.endTurn)
  }

  /**
   * The time since moment `from` (or since the loop's last idle moment, if later), less the disk
   * syncs since then: `stalled` now, `stalledThen` at `from` (a stall is not a queue).
   */
  private waitedSince (now: number, stalled: number, from: number, stalledThen: number): number {
    return this.busySince <= from ? now - from - (stalled - stalledThen) : now - this.busySince
  }

  /** A connection taken from the accept queue. */
  connected (socket: TrackedSocket): void {
    socket[SOCKET_IN_FLIGHT] = 0
    socket.once('close', () => {
      this.inFlight -= socket[SOCKET_IN_FLIGHT]!
      socket[SOCKET_IN_FLIGHT] = -1
    })
    if (this.maxWaitMs === 0) return
    this.accepted = true
    socket[BURST] = this.burst
    socket[ACCEPTED_IN] = this.turns
    this.markTurn()
    const now = performance.now()
    if (this.burstAccepts++ === 0) this.burstStartedAt = now
    // Marks the connection with the first look that saw it waiting, unless that look was part of
    // the burst's opening (a pool opened at once keeps the discount above).
    const index = ++this.accepts
    while (this.sightings.length > 0 && this.sightings[0]!.reach < index) this.sightings.shift()
    const seen = this.sightings[0]
    if (seen !== undefined && !seen.opening) {
      socket[SEEN_AT] = seen.at
      socket[SEEN_STALLED] = seen.stalled
    }
    // The opening: the burst's second accept (its first is a burst of one, the common case, and
    // costs no look), and any within OPENING_MS of its first.
    const opening = this.burstAccepts === 2 || (this.burstAccepts > 2 && now - this.burstStartedAt <= OPENING_MS)
    if (opening || (this.burstOwnMs > 0 && now - this.lookedAt >= LOOK_EVERY_MS)) this.look(now, opening)
  }

  /**
   * Looks at the accept queue, where it can be read: every connection up to the accepted count
   * plus the queue's length was waiting by now.
   */
  private look (now: number, opening: boolean): void {
    if (this.queueLength === undefined) return
    const waiting = this.queueLength()
    if (waiting === undefined) return
    const reach = this.accepts + waiting
    const last = Math.max(this.lookedReach, this.accepts)
    // A pool opened at once in the middle of a burst (a client that connects while the
    // connections of one that left are still being accepted): many at once since the last look.
    const joined = reach - last
    const pool = joined >= POOL_MIN && joined >= (now - this.lookedAt) * POOL_PER_MS
    this.lookedAt = now
    this.lookedReach = reach
    if (joined > 0) this.sightings.push({ reach, at: now, stalled: loopStalledMs(), opening: opening || pool })
  }

  /** Records how long a request read from `socket` has waited, at the moment it is read. */
  arrived (req: Tracked, socket: TrackedSocket): void {
    const now = performance.now()
    // The loop's idle time grows only while it waits for I/O with nothing to do.
    if (!this.idleRead) {
      this.idleRead = true
      const idle = performance.eventLoopUtilization().idle
      if (this.busySince < 0 || idle > this.idleSeen) {
        this.busySince = now
        this.idleSeen = idle
      }
    }
    this.markTurn()
    // Between accepts, too: a turn can be long, and a connection that arrives during it is
    // counted from the next look that sees it.
    if (this.burstOwnMs > 0 && now - this.lookedAt >= LOOK_EVERY_MS) this.look(now, false)
    const stalled = loopStalledMs()
    req[STALLED_AT] = stalled
    const sinceTurn = this.waitedSince(now, stalled, this.turnBeforeLastEnd, this.stalledAtTurnBeforeLast)
    this.turnRequests++
    if (socket[ANSWERED] === true) {
      req[WAITED] = sinceTurn
      if (socket[BURST] === this.burst) this.turnBurstRequests++
    } else {
      let waited = Math.max(sinceTurn, this.waitedSince(now, stalled, this.acceptQueueEmptyAt, this.stalledAtQueueEmpty) - this.burstOwnMs)
      // Seen waiting in the accept queue after the burst's opening batch, and read in the turn
      // after it was accepted (so its bytes were there): it waited at least since it was seen.
      const seenAt = socket[SEEN_AT]
      if (seenAt !== undefined && this.turns <= socket[ACCEPTED_IN]! + 1) {
        waited = Math.max(waited, this.waitedSince(now, stalled, seenAt, socket[SEEN_STALLED]!))
      }
      req[WAITED] = waited
    }
  }

  /** Throws 503 when the request waited too long or too many are in flight; else counts it in. */
  admit (req: Tracked, reply: FastifyReply): void {
    if (this.maxWaitMs > 0 && (req[WAITED] ?? 0) > this.maxWaitMs) throw overloaded('requests wait too long')
    // A stream may be refused as it starts, but once open it holds no place in the bound.
    if (isLongLived(req)) return
    if (this.maxInFlight > 0 && this.inFlight >= this.maxInFlight) throw overloaded('too many requests in flight')
    const socket = req.raw.socket as TrackedSocket | null
    const counted = socket?.[SOCKET_IN_FLIGHT]
    if (counted === -1) return
    this.inFlight++
    if (counted === undefined) {
      // Not from a connection this server accepted (app.inject): its reply says when it closes.
      req[IN_FLIGHT] = true
      reply.raw.once('close', () => { this.release(req) })
    } else {
      req[IN_FLIGHT] = socket!
      socket![SOCKET_IN_FLIGHT] = counted + 1
    }
  }

  /**
   * A request leaves the count when answered, or when its connection closes first: a listener
   * per connection, not one per request (that was ~2% of a read's instructions).
   */
  release (req: Tracked): void {
    const counted = req[IN_FLIGHT]
    if (counted === undefined || counted === false) return
    req[IN_FLIGHT] = false
    if (counted === true) {
      this.inFlight--
    } else if (counted[SOCKET_IN_FLIGHT]! > 0) {
      counted[SOCKET_IN_FLIGHT]!--
      this.inFlight--
    }
  }

  /** An answer went out on `socket`: the connection is past the accept queue. */
  answered (socket: TrackedSocket): void {
    socket[ANSWERED] = true
    this.markTurn()
  }

  bodyReadStarted (req: Tracked): void {
    req[BODY_READ] = performance.now()
  }

  bodyReadEnded (req: Tracked): void {
    if (req[BODY_READ] !== undefined) req[BODY_READ] = performance.now() - req[BODY_READ]
  }

  /** Whether the request, about to reach its handler, has waited too long (its body's reading and the loop's disk syncs left out). */
  waitedTooLong (req: Tracked, elapsedMs: number): boolean {
    const stalls = loopStalledMs() - (req[STALLED_AT] ?? 0)
    return (req[WAITED] ?? 0) + elapsedMs - (req[BODY_READ] ?? 0) - stalls > this.maxWaitMs
  }
}

interface Pending { req: IncomingMessage, res: ServerResponse }
type Handler = (req: IncomingMessage, res: ServerResponse) => void
const QUEUED = Symbol('queued')

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
 * Puts the admission queue (src/http/admission.ts) in front of Fastify: every request the server
 * reads, probes aside, goes through it, and reaches Fastify's handler when served.
 */
function queueRequests (app: FastifyInstance, shedder: LoadShedder, security: Record<string, string>): void {
  const server = app.server
  const handlers = server.listeners('request') as Handler[]
  const dispatch = (req: IncomingMessage, res: ServerResponse) => { for (const h of handlers) h.call(server, req, res) }
  const answer = shedAnswer(security)
  let shed = 0
  let logTimer: NodeJS.Timeout | undefined
  const logShed = () => {
    logTimer = undefined
    app.log.warn({ code: 'SERVICE_UNAVAILABLE', status: 503, shed }, 'service unavailable: requests shed (they waited too long)')
    shed = 0
  }
  const queue = new AdmissionQueue<Pending>(
    { maxWaitMs: shedder.maxWaitMs, intervalMs: OVERLOAD_INTERVAL_MS, targetMs: Math.max(1, Math.round(shedder.maxWaitMs / 5)), sliceMs: SLICE_MS },
    ({ req, res }) => {
      (req as IncomingMessage & { [QUEUED]?: boolean })[QUEUED] = true
      dispatch(req, res)
    },
    p => {
      answer(p)
      shedder.answered(p.req.socket as TrackedSocket)
      shed++
      logTimer ??= setTimeout(logShed, SHED_LOG_EVERY_MS).unref()
    },
    ({ req }) => req.socket.destroyed
  )
  server.removeAllListeners('request')
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (PROBE_PATHS.has(pathOf(req.url ?? '/'))) return dispatch(req, res)
    const tracked = req as unknown as Tracked
    const socket = req.socket as TrackedSocket
    shedder.arrived(tracked, socket)
    // A new connection's request counts what it waited in the kernel's accept queue (the shedder's
    // estimate); on a connection that has had an answer the wait counts from now: the estimate
    // from the turns assumed a request is served in the turn that reads it, and counted a closed
    // loop of 64 connections over the bound once the queue served them in later turns (hundreds
    // of 503s in 5 s), while with the queue a turn is short and a request waits at most one.
    queue.offer({ req, res }, socket[ANSWERED] === true ? 0 : tracked[WAITED] ?? 0)
  })
  app.addHook('onClose', (_app, done) => {
    if (logTimer !== undefined) {
      clearTimeout(logTimer)
      logShed()
    }
    done()
  })
}

function shedByWait (app: FastifyInstance, config: Pick<Config, 'overloadMaxWaitMs' | 'overloadMaxInFlight' | 'overloadQueue' | 'corsOrigins'>): void {
  const shedder = new LoadShedder(config.overloadMaxWaitMs, config.overloadMaxInFlight)
  if (shedder.maxWaitMs === 0 && shedder.maxInFlight === 0) return
  app.server.on('connection', (socket: TrackedSocket) => { shedder.connected(socket) })
  if (shedder.maxWaitMs > 0) {
    if (config.overloadQueue) queueRequests(app, shedder, apiSecurityHeaders(config.corsOrigins))
    let reader: ReturnType<typeof acceptQueueReader>
    app.server.once('listening', () => {
      const address = app.server.address()
      if (address === null || typeof address === 'string') return
      reader = acceptQueueReader(address as AddressInfo)
      shedder.queueLength = reader?.read
    })
    app.addHook('onClose', (_app, done) => {
      shedder.queueLength = undefined
      reader?.close()
      done()
    })
  }
  // Hooks with a callback, not async, like the deadline's: they run on every request.
  app.addHook('onRequest', (req: Tracked, reply, done) => {
    const socket = req.raw.socket
    // Requests not read from a socket (app.inject) waited in no socket; the queue judged the others by their wait.
    const queued = (req.raw as IncomingMessage & { [QUEUED]?: boolean })[QUEUED] === true
    if (shedder.maxWaitMs > 0 && socket instanceof Socket && !queued) shedder.arrived(req, socket)
    if (exemptFromShedding(req)) return done()
    try {
      shedder.admit(req, reply)
      done()
    } catch (err) {
      done(err as Error)
    }
  })
  app.addHook('onResponse', (req: Tracked, _reply, done) => {
    shedder.release(req)
    const socket: unknown = req.raw.socket
    if (shedder.maxWaitMs > 0 && socket instanceof Socket) shedder.answered(socket)
    done()
  })
  if (shedder.maxWaitMs === 0) return
  app.addHook('preParsing', (req: Tracked, _reply, payload, done) => {
    shedder.bodyReadStarted(req)
    done(null, payload)
  })
  app.addHook('preValidation', (req: Tracked, _reply, done) => {
    shedder.bodyReadEnded(req)
    done()
  })
  app.addHook('preHandler', (req: Tracked, reply, done) => {
    if (!exemptFromShedding(req) && shedder.waitedTooLong(req, reply.elapsedTime)) done(overloaded('requests wait too long'))
    else done()
  })
}

/**
 * Under load, requests are shed with 503 SERVICE_UNAVAILABLE and Retry-After at once,
 * never queued: by the time they waited (LoadShedder), by the count in flight, and by the
 * event loop's mean delay (under-pressure). Probes are never shed.
 */
export const sheddingPlugin = fp(async function shedding (app: FastifyInstance, opts: { config: Config }) {
  shedByWait(app, opts.config)

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
        done(overloaded('the event loop is delayed'))
      } else {
        done()
      }
    })
  }
}, { name: 'shedding', dependencies: ['problems'] })
