import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { cacheControlFor, type Audience } from './caching.ts'

/** A strong entity tag from the parts that decide a representation's bytes. */
export function strongEtag (...parts: (string | number)[]): string {
  return `"${createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 27)}"`
}

/** A weak entity tag over a serialised body (lists: equal content, maybe not equal bytes). */
export function weakEtag (body: string): string {
  return `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}

function opaque (tag: string): string {
  return tag.startsWith('W/') ? tag.slice(2) : tag
}

/** The entity tags of an If-Match / If-None-Match value, or '*' (RFC 9110 §13.1). */
function parseTags (header: string): '*' | string[] {
  if (header.trim() === '*') return '*'
  return header.match(/(?:W\/)?"[^"]*"/g) ?? []
}

function httpDateSeconds (value: string): number | null {
  const t = Date.parse(value)
  return Number.isNaN(t) ? null : Math.floor(t / 1000)
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
  if (ims !== undefined && v.lastModified) {
    const since = httpDateSeconds(ims)
    return since !== null && seconds(v.lastModified) <= since
  }
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
  if (ius !== undefined && v.lastModified) {
    const since = httpDateSeconds(ius)
    return since !== null && seconds(v.lastModified) <= since
  }
  return true
}

/** Whether the request names any precondition at all. */
export function hasPrecondition (req: FastifyRequest): boolean {
  return req.headers['if-match'] !== undefined || req.headers['if-unmodified-since'] !== undefined
}

/**
 * Sends a successful representation: validators, Cache-Control and Content-Type in one place,
 * and 304 with no body when the client's copy is current.
 */
export function sendRepresentation (
  req: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
  opts: { etag: string, lastModified?: Date, audience: Audience, status?: number }
): FastifyReply {
  reply.header('etag', opts.etag)
  if (opts.lastModified) reply.header('last-modified', opts.lastModified.toUTCString())
  reply.header('cache-control', cacheControlFor(req, opts.audience))
  if ((req.method === 'GET' || req.method === 'HEAD') && isNotModified(req, opts)) {
    return reply.code(304).send()
  }
  return reply.code(opts.status ?? 200).header('content-type', req.responseMediaType).send(body)
}
