import { randomBytes, randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyRequest {
    /** W3C trace-id: continued from a valid incoming traceparent, else new. */
    traceId: string
    /** This service's span-id for the request. */
    spanId: string
    traceFlags: string
  }
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._~:/+=@-]{1,200}$/
// W3C Trace Context §3.2: version 00 has exactly these four fields; ff is an invalid version.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/** X-Request-Id: the client's, if it is short and safe to log, else a new UUID. */
export function genRequestId (req: IncomingMessage): string {
  const sent = req.headers['x-request-id']
  return typeof sent === 'string' && SAFE_REQUEST_ID.test(sent) ? sent : randomUUID()
}

export function parseTraceparent (header: unknown): { traceId: string, flags: string } | null {
  if (typeof header !== 'string') return null
  const m = TRACEPARENT.exec(header.trim())
  if (!m) return null
  const [, version, traceId, parentId, flags, rest] = m
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null
  if (/^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return null
  return { traceId: traceId!, flags: flags! }
}

// One getrandom call per 256 requests instead of two per request (each randomBytes call is a
// synchronous job of its own, a measurable share of a request's cost).
let pool = Buffer.alloc(0)
let used = 0

/** `bytes` random bytes as lower-case hex, from a pool refilled by the CSPRNG. */
export function randomHex (bytes: number): string {
  if (used + bytes > pool.length) {
    pool = randomBytes(24 * 256)
    used = 0
  }
  const hex = pool.toString('hex', used, used + bytes)
  used += bytes
  return hex
}

/**
 * Continues or starts the trace of a request and echoes it with the request id. Runs first in
 * onRequest, and from the framework-error path for requests rejected before any hook runs.
 */
export function startTrace (req: FastifyRequest, reply: FastifyReply): void {
  if (typeof req.traceId === 'string' && req.traceId !== '') return
  const parent = parseTraceparent(req.headers.traceparent)
  req.traceId = parent?.traceId ?? randomHex(16)
  req.spanId = randomHex(8)
  req.traceFlags = parent?.flags ?? '01'
  reply.header('x-request-id', req.id)
  reply.header('traceparent', `00-${req.traceId}-${req.spanId}-${req.traceFlags}`)
}

export const tracingPlugin = fp(async function tracing (app: FastifyInstance) {
  app.decorateRequest('traceId', '')
  app.decorateRequest('spanId', '')
  app.decorateRequest('traceFlags', '')
  app.addHook('onRequest', (req, reply, done) => {
    startTrace(req, reply)
    done()
  })
}, { name: 'tracing' })
