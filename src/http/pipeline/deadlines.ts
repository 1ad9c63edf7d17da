import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Catalogue } from '../../catalogue.ts'
import { AppError } from '../../errors.ts'
import { buildProblem, problemHeaders, statusOf, SUCCESS_ONLY_HEADERS, unavailable } from '../protocol/problems.ts'
import { isLongLived, routeOf } from '../protocol/route.ts'

/**
 * Why a request was abandoned, once it was, and the controller of its `abandoned` signal, made on
 * its first read (most requests never read it): this module's alone.
 */
interface Abandonment { reason: Error | null, controller: AbortController | null }
const ABANDONMENT = Symbol('abandonment')

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Aborted once nobody waits for the answer: the request ran out of time (REQUEST_TIMEOUT_MS,
     * and a 503 has been sent) or the client went away. Long work should observe it and stop.
     */
    abandoned: AbortSignal
    [ABANDONMENT]: Abandonment | null
    /**
     * The request's writes are being committed: its deadline no longer applies, nor does a
     * shutdown's 503, since either would say "nothing was changed" of a write about to be
     * committed. Its answer follows the commit (on SQLite, at the end of the loop's turn).
     */
    commitStarted (): void
  }
}

/** When a request runs out of time (`performance.now()` milliseconds), and its reply. */
interface Deadline { at: number, reply: FastifyReply }

/**
 * What a request that ran out of time is answered: a body still arriving is the client's fault
 * (408, as Node's own requestTimeout answers it, whichever of the two fires first); a request
 * wholly received and not answered in time is the service's (503, retry later).
 */
function timedOut (req: FastifyRequest): AppError {
  // `complete` is false only on a request read from a socket (an injected one has it undefined).
  return req.raw.complete === false
    ? new AppError('CLIENT_TIMEOUT', 'The request body did not arrive within REQUEST_TIMEOUT_MS; the connection is closed.')
    : unavailable('REQUEST_TIMEOUT')
}

/** Marks a request abandoned: its `abandoned` signal aborts now, or aborted when first read. */
function abandon (req: FastifyRequest, reason: Error): void {
  const a = (req[ABANDONMENT] ??= { reason: null, controller: null })
  a.reason = reason
  a.controller?.abort(reason)
}

/**
 * The requests an app has in flight, each with its deadline (REQUEST_TIMEOUT_MS after it was
 * read): built once by the composition root (src/context.ts), fed by the deadlines plugin's hooks,
 * and reached by the end of a graceful shutdown (`abandonAll`).
 */
export class InFlight {
  // A Map, not a WeakMap: shutdown must reach every request still in flight. Entries leave on answer.
  // Every request gets the same timeout, so the Map's insertion order is deadline order: one timer,
  // set for the oldest entry, replaces a timer per request (arming and clearing a timer for each
  // request was ~1.5% of a read's CPU).
  private readonly deadlines = new Map<FastifyRequest, Deadline>()
  private sweeper: NodeJS.Timeout | null = null

  constructor (private readonly timeoutMs: number, private readonly catalogue: Catalogue) {}

  /** A request read: its deadline starts now. */
  track (req: FastifyRequest, reply: FastifyReply): void {
    this.deadlines.set(req, { at: performance.now() + this.timeoutMs, reply })
    this.arm()
  }

  /** Whether `req` still has a deadline (no answer on its way yet). */
  has (req: FastifyRequest): boolean {
    return this.deadlines.has(req)
  }

  /** Forgets a request's deadline; with none left, no timer keeps the process alive. */
  forget (req: FastifyRequest): void {
    this.deadlines.delete(req)
    if (this.deadlines.size === 0 && this.sweeper !== null) {
      clearTimeout(this.sweeper)
      this.sweeper = null
    }
  }

  /** Answers every request still in flight with 503 and aborts its work (shutdown's last step): it commits nothing. */
  abandonAll (): void {
    for (const [req, d] of [...this.deadlines]) {
      this.expire(req, d.reply, unavailable('SERVICE_UNAVAILABLE', 'The instance is shutting down and could not finish this request in time; nothing was changed. Retry.'))
    }
  }

  private arm (): void {
    if (this.sweeper !== null) return
    const first = this.deadlines.values().next()
    if (first.done === true) return
    this.sweeper = setTimeout(() => { this.sweep() }, Math.max(0, first.value.at - performance.now()))
  }

  private sweep (): void {
    this.sweeper = null
    const now = performance.now()
    for (const [req, d] of this.deadlines) {
      if (d.at > now) break
      this.expire(req, d.reply, timedOut(req))
    }
    this.arm()
  }

  private expire (req: FastifyRequest, reply: FastifyReply, err: AppError): void {
    this.forget(req)
    if (reply.sent || reply.raw.headersSent) return
    // Hijacked and written at once: the abandoned work may still call reply.code(), send() or
    // throw, and none of that may touch this answer (Fastify drops sends on a hijacked reply).
    reply.hijack()
    const kept: Record<string, string | number | string[]> = {}
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined && !(SUCCESS_ONLY_HEADERS as readonly string[]).includes(name)) kept[name] = value
    }
    const body = JSON.stringify(buildProblem(this.catalogue, req, err))
    const status = statusOf(this.catalogue, err)
    // A body still arriving would keep the connection busy (Node reads and discards it to reuse the
    // connection): closing is the only way to stop a client that trickles its upload.
    const close: Record<string, string> = req.raw.complete ? {} : { connection: 'close' }
    reply.raw.writeHead(status, { ...kept, ...problemHeaders(req, err), ...close, 'content-length': Buffer.byteLength(body) })
    reply.raw.end(body)
    const line = { timeout_ms: this.timeoutMs, route: routeOf(req).url, code: err.code }
    if (status >= 500) req.log.warn(line, 'request abandoned')
    else req.log.info(line, 'request abandoned: its body did not arrive in time')
    abandon(req, err)
  }
}

/**
 * A request not answered within REQUEST_TIMEOUT_MS gets 503 REQUEST_TIMEOUT with Retry-After (or
 * 408 CLIENT_TIMEOUT while its body is still arriving) and `req.abandoned` aborts; a late answer from the abandoned work is dropped by Fastify (logged, no
 * crash). Shutdown answers what is still in flight the same way (`InFlight.abandonAll`).
 */
export const deadlinesPlugin = fp(async function deadlines (app: FastifyInstance, opts: { inFlight: InFlight }) {
  const { inFlight } = opts
  app.decorateRequest('commitStarted', function (this: FastifyRequest) { inFlight.forget(this) })
  app.decorateRequest(ABANDONMENT, null)
  // An AbortController per request was a measurable share of a read's cost, for a signal that
  // only writes look at: it is made when first read, already aborted if the request was.
  app.decorateRequest('abandoned', {
    getter (this: FastifyRequest): AbortSignal {
      const a = (this[ABANDONMENT] ??= { reason: null, controller: null })
      if (a.controller === null) {
        a.controller = new AbortController()
        if (a.reason !== null) a.controller.abort(a.reason)
      }
      return a.controller.signal
    },
  })

  // Hooks with a callback, not async: each async hook costs a promise and a microtask per request.
  app.addHook('onRequest', (req, reply, done) => {
    // Not req.signal: Node closes the request stream once its body is read, long before the answer.
    // A client that goes away is caught by onRequestAbort below.
    if (!isLongLived(req)) inFlight.track(req, reply)
    done()
  })
  // Once an answer is on its way (in onSend), the deadline no longer applies: a second answer
  // racing the first would write the headers twice. This is the first onSend hook, and nothing
  // between serialising and onSend waits, so the serialisation needs no hook of its own (and
  // without any preSerialization hook Fastify serialises without the hook runner).
  app.addHook('onSend', (req, _reply, payload, done) => {
    inFlight.forget(req)
    done(null, payload)
  })
  app.addHook('onResponse', (req, _reply, done) => {
    inFlight.forget(req)
    done()
  })
  app.addHook('onRequestAbort', (req, done) => {
    if (inFlight.has(req)) {
      inFlight.forget(req)
      abandon(req, new Error('the client closed the connection'))
    }
    done()
  })
}, { name: 'deadlines', dependencies: ['problems'] })
