import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { OutgoingHttpHeaders } from 'node:http'
import { routeOf } from '../protocol/route.ts'
import type { KeptAnswer, PublicCache } from '../protocol/public-cache.ts'
import type { Registry } from 'prom-client'
import { Counter } from 'prom-client'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Whether the public answers cache may keep this route's anonymous public answers: set by a
     * route whose answers are the same for every anonymous reader of the same URL, Accept and
     * Prefer, and change only with a change that records an event.
     */
    publicCache?: boolean
  }
}

/**
 * Headers that belong to one request, which the pipeline sets anew on every answer (a hit
 * included) and a kept answer therefore never carries: ids and trace, rate limit, CORS (by the
 * request's Origin), and what Node and Fastify compute at sending.
 */
const PER_REQUEST = new Set(['x-request-id', 'traceparent', 'ratelimit', 'ratelimit-policy', 'retry-after', 'date',
  'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'content-encoding'])

const SLOT = Symbol('publicCache')
type WithSlot = FastifyRequest & { [SLOT]?: { key: string, generation: number } }

/** What decides a cacheable answer's bytes, or null when the request is not one the cache serves. */
function keyOf (req: FastifyRequest): string | null {
  if (req.method !== 'GET' && req.method !== 'HEAD') return null
  const h = req.headers
  // Credentials decide visibility; a Range is not an answer the cache holds.
  if (h.authorization !== undefined || h.cookie !== undefined || h.range !== undefined) return null
  if (routeOf(req).config.publicCache !== true) return null
  // Accept (version, media type) and Prefer (counts) change the bytes, Origin the CORS headers; the
  // path keeps its version prefix, which the links carry. Accept-Encoding does not: the body is
  // kept before content coding, which every answer, a hit too, goes through.
  return `${h.host ?? ''}\n${req.originalUrl}\n${h.accept ?? ''}\n${h.prefer ?? ''}\n${h.origin ?? ''}`
}

/** RFC 9110 §13.2.2 for GET/HEAD, as a miss decides it (src/http/toolkit/conditional.ts's isNotModified). */
export type NotModified = (req: FastifyRequest, validators: { readonly etag: string, readonly lastModified?: Date | undefined }) => boolean

function send (req: FastifyRequest, reply: FastifyReply, kept: KeptAnswer, isNotModified: NotModified): void {
  reply.headers(kept.headers)
  // As sendRepresentation answers on a miss: a 304 carries no Content-Type.
  if (isNotModified(req, kept)) {
    reply.removeHeader('content-type')
    reply.code(304).send()
    return
  }
  reply.code(200).send(kept.body)
}

/**
 * Answers anonymous reads of public content from `cache` when it holds them, with no store
 * query and no rendering (304 included), and keeps the answers of those it did not hold. Its
 * hook comes after authentication, the rate limit, admission and versioning, which every
 * request, a hit too, goes through; its onSend after the app-level ones that set headers (Vary)
 * and before a route's own (content coding), so what it keeps is what the client gets, uncoded. Conditional requests are decided by the
 * toolkit's rule (`isNotModified`, a layer above, given by the app), the one a miss uses.
 */
export const publicCachePlugin = fp(async function publicCache (app: FastifyInstance, { cache, isNotModified, metrics }: { cache: PublicCache, isNotModified: NotModified, metrics: Registry }) {
  const hits = new Counter({ name: 'public_cache_hits_total', help: 'Anonymous public reads of the API answered from this instance\'s cache (no store query, no rendering)', registers: [metrics] })
  const misses = new Counter({ name: 'public_cache_misses_total', help: 'Anonymous public reads of the API the cache did not answer (rendered, then kept when they could be)', registers: [metrics] })
  app.addHook('onRequest', (req: WithSlot, reply, done) => {
    const key = keyOf(req)
    if (key === null) {
      done()
      return
    }
    const kept = cache.find(key)
    if (kept === undefined) {
      misses.inc()
      req[SLOT] = { key, generation: cache.generation }
      done()
      return
    }
    hits.inc()
    send(req, reply, kept, isNotModified)
  })

  app.addHook('onSend', (req: WithSlot, reply, payload, done) => {
    const slot = req[SLOT]
    if (slot !== undefined && req.method === 'GET' && reply.statusCode === 200 && (typeof payload === 'string' || Buffer.isBuffer(payload)) && cache.admits(slot.generation)) {
      const headers = reply.getHeaders()
      const etag = headers.etag
      const cacheControl = headers['cache-control']
      if (typeof etag === 'string' && typeof cacheControl === 'string' && cacheControl.startsWith('public') &&
        headers['set-cookie'] === undefined && headers['content-encoding'] === undefined) {
        const kept: OutgoingHttpHeaders = {}
        for (const [name, value] of Object.entries(headers)) if (!PER_REQUEST.has(name) && value !== undefined) kept[name] = value
        const lastModified = typeof headers['last-modified'] === 'string' ? new Date(headers['last-modified']) : undefined
        cache.keep(slot.key, slot.generation, { status: 200, headers: kept, body: payload, etag, lastModified })
      }
    }
    done(null, payload)
  })

  // A write on this instance is seen by the next read here: the store empties the cache when a unit
  // of work that recorded events ends (src/context.ts), before the write is answered.
}, { name: 'public-cache', dependencies: ['auth', 'rate-limit', 'authorization', 'versioning'] })
