import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { OutgoingHttpHeaders } from 'node:http'
import { routeOf } from '../protocol/route.ts'

/** One kept answer: its status, the headers that are the same for every reader, its body before content coding. */
interface Kept {
  readonly headers: OutgoingHttpHeaders
  readonly body: string | Buffer
  readonly etag: string
  readonly lastModified: Date | undefined
  readonly bytes: number
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Whether the public answers cache may keep this route's anonymous public answers: set by a
     * route whose answers are the same for every anonymous reader of the same URL, Accept and
     * Prefer, and change only with a change that records an event. `true`, or a test of each
     * answer's body: false when this one shows something that changes without an event.
     */
    publicCache?: true | ((body: string | Buffer) => boolean)
  }
}

/** What a kept answer may hold at most, whatever the cache's size. */
const MAX_ENTRY_BYTES = 1024 * 1024

/**
 * Headers that belong to one request, which the pipeline sets anew on every answer (a hit
 * included) and a kept answer therefore never carries: ids and trace, rate limit, CORS (by the
 * request's Origin), and what Node and Fastify compute at sending.
 */
const PER_REQUEST = new Set(['x-request-id', 'traceparent', 'ratelimit', 'ratelimit-policy', 'retry-after', 'date',
  'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'content-encoding'])

/** The cache's counters, registered by the composition root. */
export interface PublicCacheCounters {
  hit (): void
  miss (): void
}

/**
 * This instance's bounded store of anonymous, public answers (of the routes that declare
 * `publicCache`), in the order they were kept: when full, the oldest go first. `clear` empties
 * it and moves the generation on, so an answer whose rendering began before a change is never
 * kept (`keep` with the generation read when its request began).
 */
export class PublicCache {
  private readonly entries = new Map<string, Kept>()
  private size = 0
  private gen = 0
  readonly maxEntryBytes: number

  constructor (readonly maxBytes: number, readonly maxEntries: number, readonly counters: PublicCacheCounters) {
    this.maxEntryBytes = Math.min(maxBytes, MAX_ENTRY_BYTES)
  }

  get generation (): number { return this.gen }
  /** Bytes kept (bodies, headers and keys). */
  get bytes (): number { return this.size }
  get count (): number { return this.entries.size }

  find (key: string): Kept | undefined {
    return this.entries.get(key)
  }

  /** Keeps `entry` under `key` unless it is too large or the cache changed since `generation`; false when not kept. */
  keep (key: string, generation: number, entry: Omit<Kept, 'bytes'>): boolean {
    if (generation !== this.gen) return false
    let bytes = key.length + (typeof entry.body === 'string' ? Buffer.byteLength(entry.body) : entry.body.length)
    for (const [name, value] of Object.entries(entry.headers)) bytes += name.length + String(value).length
    if (bytes > this.maxEntryBytes) return false
    this.drop(key)
    while (this.entries.size > 0 && (this.size + bytes > this.maxBytes || this.entries.size >= this.maxEntries)) {
      this.drop(this.entries.keys().next().value!)
    }
    this.entries.set(key, { ...entry, bytes })
    this.size += bytes
    return true
  }

  /** Forgets everything: something any kept answer may have been made from has changed. */
  clear (): void {
    this.gen++
    this.entries.clear()
    this.size = 0
  }

  private drop (key: string): void {
    const old = this.entries.get(key)
    if (old === undefined) return
    this.entries.delete(key)
    this.size -= old.bytes
  }
}

const SLOT = Symbol('publicCache')
type WithSlot = FastifyRequest & { [SLOT]?: { key: string, generation: number } }

/** What decides a cacheable answer's bytes, or null when the request is not one the cache serves. */
function keyOf (req: FastifyRequest): string | null {
  if (req.method !== 'GET' && req.method !== 'HEAD') return null
  const h = req.headers
  // Credentials decide visibility; a Range is not an answer the cache holds.
  if (h.authorization !== undefined || h.cookie !== undefined || h.range !== undefined) return null
  if (routeOf(req).config.publicCache === undefined) return null
  // Accept (version, media type) and Prefer (counts) change the bytes, Origin the CORS headers; the
  // path keeps its version prefix, which the links carry. Accept-Encoding does not: the body is
  // kept before content coding, which every answer, a hit too, goes through.
  return `${h.host ?? ''}\n${req.originalUrl}\n${h.accept ?? ''}\n${h.prefer ?? ''}\n${h.origin ?? ''}`
}

/** RFC 9110 §13.2.2 for GET/HEAD, as a miss decides it (src/http/toolkit/conditional.ts's isNotModified). */
export type NotModified = (req: FastifyRequest, validators: { readonly etag: string, readonly lastModified?: Date | undefined }) => boolean

function keeps (rule: FastifyContextConfig['publicCache'], body: string | Buffer): boolean {
  return rule === true || (rule !== undefined && rule(body))
}

function send (req: FastifyRequest, reply: FastifyReply, kept: Kept, isNotModified: NotModified): void {
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
export const publicCachePlugin = fp(async function publicCache (app: FastifyInstance, { cache, isNotModified }: { cache: PublicCache, isNotModified: NotModified }) {
  app.addHook('onRequest', (req: WithSlot, reply, done) => {
    const key = keyOf(req)
    if (key === null) {
      done()
      return
    }
    const kept = cache.find(key)
    if (kept === undefined) {
      cache.counters.miss()
      req[SLOT] = { key, generation: cache.generation }
      done()
      return
    }
    cache.counters.hit()
    send(req, reply, kept, isNotModified)
  })

  app.addHook('onSend', (req: WithSlot, reply, payload, done) => {
    const slot = req[SLOT]
    if (slot !== undefined && req.method === 'GET' && reply.statusCode === 200 && (typeof payload === 'string' || Buffer.isBuffer(payload))) {
      const headers = reply.getHeaders()
      const etag = headers.etag
      const cacheControl = headers['cache-control']
      if (typeof etag === 'string' && typeof cacheControl === 'string' && cacheControl.startsWith('public') &&
        headers['set-cookie'] === undefined && headers['content-encoding'] === undefined && keeps(routeOf(req).config.publicCache, payload)) {
        const kept: OutgoingHttpHeaders = {}
        for (const [name, value] of Object.entries(headers)) if (!PER_REQUEST.has(name) && value !== undefined) kept[name] = value
        const lastModified = typeof headers['last-modified'] === 'string' ? new Date(headers['last-modified']) : undefined
        cache.keep(slot.key, slot.generation, { headers: kept, body: payload, etag, lastModified })
      }
    }
    done(null, payload)
  })

  // A write answered on this instance is seen by the next read here, whatever it wrote (a refused one wrote nothing).
  app.addHook('onSend', (req, reply, payload, done) => {
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS' && reply.statusCode < 400) cache.clear()
    done(null, payload)
  })
}, { name: 'public-cache', dependencies: ['auth', 'rate-limit', 'authorization', 'versioning'] })
