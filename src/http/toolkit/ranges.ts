import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import rangeParser from 'range-parser'
import { AppError } from '../../errors.ts'
import { PRIVATE_CACHE } from '../pipeline/caching.ts'
import { httpDateSeconds, isNotModified } from './conditional.ts'

/** A file to send whole or in part: its length, validators, and a reader of bytes `from`–`to` (inclusive). */
export interface RangedFile {
  readonly size: number
  /** Strong: byte-identical files have the same tag. */
  readonly etag: string
  readonly lastModified: Date
  readonly contentType: string
  readonly filename: string
  /** Who may keep it: `private, no-store` unless given (a public, immutable file says so here). */
  readonly cacheControl?: string
  /** Shown in the browser (`inline`) rather than saved (`attachment`, the default). */
  readonly inline?: boolean
  /** The bytes `from`–`to`: streamed, or (a small file) in one buffer. */
  read (from: number, to: number): AsyncIterable<Uint8Array> | Promise<Uint8Array>
}

/** RFC 9110 §14.1.2 byte-range-specs; a spec whose last position comes before its first makes the header invalid. */
const BYTE_RANGES = /^bytes=((\d+-\d*|-\d+)(\s*,\s*|$))+$/

function wellFormed (header: string): boolean {
  if (!BYTE_RANGES.test(header)) return false
  return header.slice(6).split(',').every(spec => {
    const [first, last] = spec.trim().split('-')
    return first === '' || last === '' || Number(first) <= Number(last)
  })
}

/**
 * RFC 9110 §13.1.5: a Range is honoured only when If-Range (if any) names the current file:
 * its strong ETag, or exactly its Last-Modified date. Anything else sends the whole file.
 */
function ifRangeHolds (req: FastifyRequest, file: RangedFile): boolean {
  const value = req.headers['if-range']
  if (value === undefined) return true
  const v = String(value).trim()
  if (v.startsWith('"') || v.startsWith('W/')) return v === file.etag
  const since = httpDateSeconds(v)
  return since !== null && since === Math.floor(file.lastModified.getTime() / 1000)
}

/**
 * Sends a file with byte ranges (RFC 9110 §14): `Accept-Ranges: bytes`; one satisfiable range → 206
 * with `Content-Range`; none satisfiable → 416 with `Content-Range: bytes *∕len`; several ranges →
 * merged when they touch, else the whole file with 200 (no multipart/byteranges); a malformed
 * Range, another unit, or a stale If-Range → the whole file with 200. HEAD: the same headers, no body.
 * The body streams from `read`, so memory does not grow with the file, or is sent in one write when
 * `read` gives a buffer.
 */
export function sendRanged (req: FastifyRequest, reply: FastifyReply, file: RangedFile): FastifyReply | Promise<FastifyReply> {
  reply.header('accept-ranges', 'bytes')
    .header('etag', file.etag)
    .header('last-modified', file.lastModified.toUTCString())
    .header('cache-control', file.cacheControl ?? PRIVATE_CACHE)
    .header('content-disposition', `${file.inline === true ? 'inline' : 'attachment'}; filename="${file.filename}"`)
  if (isNotModified(req, file)) return reply.code(304).send()

  let from = 0
  let to = file.size - 1
  let status = 200
  const header = req.headers.range
  // A malformed Range (or another unit) is ignored, as RFC 9110 §14.2 allows: the whole file.
  if (header !== undefined && wellFormed(header) && ifRangeHolds(req, file)) {
    const ranges = rangeParser(file.size, header, { combine: true })
    if (ranges === -1) {
      throw new AppError('RANGE_NOT_SATISFIABLE', `The file has ${file.size} bytes; no range asked for lies within it.`, {
        headers: { 'content-range': `bytes */${file.size}`, 'accept-ranges': 'bytes' },
      })
    }
    if (ranges !== -2 && ranges.length === 1) {
      from = ranges[0]!.start
      to = ranges[0]!.end
      status = 206
      reply.header('content-range', `bytes ${from}-${to}/${file.size}`)
    }
  }
  reply.code(status).header('content-type', file.contentType).header('content-length', String(to - from + 1))
  // Fastify's HEAD route sets Content-Length 0 for an absent body, but keeps it for a stream (which it drains).
  if (req.method === 'HEAD' || to < from) return reply.send(Readable.from([]))
  const body = file.read(from, to)
  if (body instanceof Promise) return body.then(bytes => reply.send(bytes))
  return reply.send(Readable.from(body, { objectMode: false }))
}
