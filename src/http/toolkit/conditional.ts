import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { cacheControlFor, type Audience } from '../pipeline/caching.ts'
import { linkBase } from '../protocol/versioning.ts'

/** A strong entity tag from the parts that decide a representation's bytes. */
export function strongEtag (...parts: (string | number)[]): string {
  // crypto.hash: one call, no Hash object per request (same digest as createHash).
  return `"${hash('sha256', parts.join('\u0000'), 'base64url').slice(0, 27)}"`
}

/**
 * A strong entity tag of stored bytes from their content digest (a file's SHA-256): equal bytes
 * give equal tags on every instance; an unknown digest gives the empty tag.
 */
export function digestEtag (digest: string | null): string {
  return `"${digest ?? ''}"`
}

/** What every stored resource has that decides its representation's bytes. */
export interface Revisioned {
  readonly id: number | string
  readonly revision: number
  readonly updatedAt: string
}

/**
 * Per kind of resource, a digest of its representations' schemas (every version's): what the code
 * makes of a stored revision. The digest goes into each ETag of that kind, so a deployment that
 * changes what a representation holds (a field added) changes every tag, though no stored
 * revision changed; instances running the same code agree on it. Built once, by the composition
 * root (src/context.ts), from the parts; the app carries it (`app.representations`).
 */
export class Representations {
  private readonly digests: ReadonlyMap<string, string>

  constructor (kinds: Iterable<readonly [kind: string, schemas: readonly unknown[]]>) {
    this.digests = new Map([...kinds].map(([kind, schemas]) => [kind, hash('sha256', JSON.stringify(schemas), 'base64url').slice(0, 8)]))
  }

  /** The digest of `kind`'s schemas; a kind not declared is its own name. */
  digest (kind: string): string {
    return this.digests.get(kind) ?? kind
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The digests of every resource's representations (Representations). */
    readonly representations: Representations
  }
}

/**
 * The strong ETag of a stored resource's representation, made of what decides its bytes and
 * hashing nothing per request: the row (id, revision, and `updated_at`, which keeps tags apart
 * across databases that reuse ids: a reset, a restore), the representation (API version, link
 * base, the kind's schema digest). The same on every instance for the same revision; a new one
 * with every change. Only characters RFC 9110's etagc allows: `updated_at` in base 36, the
 * link base's `/` kept.
 */
export function resourceEtag (digest: string, r: Revisioned, updatedAtMs: number, version: number, base: string): string {
  return `"${r.id}.${r.revision}.${updatedAtMs.toString(36)}.v${version}${base}.${digest}"`
}

/**
 * Validators of a resource's representation: a strong ETag that changes with every revision and
 * differs per version and link base (resourceEtag), and Last-Modified from `updated_at`.
 */
export function validatorsOf (req: FastifyRequest, kind: string, r: Revisioned): Validators & { lastModified: Date } {
  const updatedAtMs = Date.parse(r.updatedAt)
  return { etag: resourceEtag(req.server.representations.digest(kind), r, updatedAtMs, req.apiVersion, linkBase(req)), lastModified: new Date(updatedAtMs) }
}

/** Sends resource `r` of `kind` as a GET shows it: its validators, Cache-Control for `audience`, 304 when unchanged. */
export function sendResource (req: FastifyRequest, reply: FastifyReply, kind: string, r: Revisioned, body: unknown, audience: Audience): FastifyReply {
  return sendRepresentation(req, reply, body, { ...validatorsOf(req, kind, r), audience })
}

/** A weak entity tag over a serialised body (lists: equal content, maybe not equal bytes). */
export function weakEtag (body: string): string {
  return `W/"${hash('sha256', body, 'base64url').slice(0, 27)}"`
}

function opaque (tag: string): string {
  return tag.startsWith('W/') ? tag.slice(2) : tag
}

/** The entity tags of an If-Match / If-None-Match value, or '*' (RFC 9110 §13.1). */
function parseTags (header: string): '*' | string[] {
  if (header.trim() === '*') return '*'
  return header.match(/(?:W\/)?"[^"]*"/g) ?? []
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)'
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
// RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept.
const HTTP_DATE = new RegExp([
  `^${DAY}, \\d{2} ${MONTH} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT$`,
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \\d{2}-${MONTH}-\\d{2} \\d{2}:\\d{2}:\\d{2} GMT$`,
  `^${DAY} ${MONTH} [ \\d]\\d \\d{2}:\\d{2}:\\d{2} \\d{4}$`,
].join('|'))

/** Seconds since the epoch of an HTTP-date, or null for anything else (which the caller then ignores). */
export function httpDateSeconds (value: string): number | null {
  const v = value.trim()
  if (!HTTP_DATE.test(v)) return null
  const t = Date.parse(v.endsWith('GMT') ? v : `${v} GMT`)
  if (Number.isNaN(t)) return null
  // Date.parse rolls "31 Nov" over to 1 Dec: a date whose day does not survive the round trip is invalid.
  const day = Number(/\b(\d{1,2})[ -](?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2})\b/.exec(v)?.slice(1).find(Boolean))
  return new Date(t).getUTCDate() === day ? Math.floor(t / 1000) : null
}

function seconds (d: Date): number {
  return Math.floor(d.getTime() / 1000)
}

export interface Validators {
  readonly etag: string
  readonly lastModified?: Date
}

/**
 * RFC 9110 §13.2.2 steps 3–4 for GET/HEAD: true when the client's copy is current.
 * If-None-Match (weak comparison) wins; If-Modified-Since counts only without it.
 */
export function isNotModified (req: FastifyRequest, v: Validators): boolean {
  const inm = req.headers['if-none-match']
  if (inm !== undefined) {
    const tags = parseTags(inm)
    return tags === '*' || tags.some(t => opaque(t) === opaque(v.etag))
  }
  const ims = req.headers['if-modified-since']
  const since = ims === undefined ? null : httpDateSeconds(ims)
  // An invalid date is ignored (RFC 9110 §13.1.3).
  if (since !== null && v.lastModified) return seconds(v.lastModified) <= since
  return false
}

/**
 * RFC 9110 §13.2.2 steps 1–2 for writes: false when If-Match (strong comparison) or, without it,
 * If-Unmodified-Since says the client's copy is stale.
 */
export function preconditionHolds (req: FastifyRequest, v: Validators): boolean {
  const im = req.headers['if-match']
  if (im !== undefined) {
    const tags = parseTags(im)
    return tags === '*' || tags.some(t => !t.startsWith('W/') && !v.etag.startsWith('W/') && t === v.etag)
  }
  const ius = req.headers['if-unmodified-since']
  const since = ius === undefined ? null : httpDateSeconds(ius)
  // An invalid date is ignored (RFC 9110 §13.1.4): the write goes ahead.
  if (since !== null && v.lastModified) return seconds(v.lastModified) <= since
  return true
}

/**
 * The request's precondition (If-Match, If-Unmodified-Since) on the current state of a `kind`
 * resource, to check before changing it; undefined when the request names none.
 */
export function preconditionOf (req: FastifyRequest, kind: string): ((current: Revisioned) => boolean) | undefined {
  if (!hasPrecondition(req)) return undefined
  return current => preconditionHolds(req, validatorsOf(req, kind, current))
}

/** Whether the request names any precondition at all. */
export function hasPrecondition (req: FastifyRequest): boolean {
  const ius = req.headers['if-unmodified-since']
  return req.headers['if-match'] !== undefined || (ius !== undefined && httpDateSeconds(ius) !== null)
}

/**
 * Sends a successful representation: validators, Cache-Control and Content-Type in one place,
 * and 304 with no body when the client's copy is current.
 */
export function sendRepresentation (
  req: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
  opts: { etag: string, lastModified?: Date, audience: Audience, status?: number, mediaType?: string, cacheControl?: string }
): FastifyReply {
  reply.header('etag', opts.etag)
  if (opts.lastModified) reply.header('last-modified', opts.lastModified.toUTCString())
  reply.header('cache-control', opts.cacheControl ?? cacheControlFor(req, opts.audience))
  if ((req.method === 'GET' || req.method === 'HEAD') && isNotModified(req, opts)) {
    return reply.code(304).send()
  }
  return reply.code(opts.status ?? 200).header('content-type', opts.mediaType ?? req.responseMediaType).send(body)
}
