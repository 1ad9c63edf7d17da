import { Readable, type Transform } from 'node:stream'
import { pipeline } from 'node:stream'
import zlib from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'
import { appendVary } from './caching.ts'

/** Contract §4: bodies of at least this many bytes are compressed when the client accepts it. */
export const COMPRESSION_THRESHOLD = 1024

type Coding = 'br' | 'gzip'

// Brotli quality 4 is about as fast as gzip's default and smaller; 11 (the default) is for static files.
const BROTLI = { params: { [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT, [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }
const COMPRESS_SYNC: Record<Coding, (b: Buffer | string) => Buffer> = {
  br: b => zlib.brotliCompressSync(b, BROTLI),
  gzip: b => zlib.gzipSync(b),
}
const COMPRESS_STREAM: Record<Coding, () => Transform> = {
  br: () => zlib.createBrotliCompress(BROTLI),
  gzip: () => zlib.createGzip(),
}
const DECOMPRESS: Record<string, (() => Transform) | undefined> = {
  br: () => zlib.createBrotliDecompress(),
  gzip: () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
}
const COMPRESSIBLE = /^text\/|json|javascript|xml|svg/i

/**
 * The coding to answer with: `br` or `gzip` by the client's weights (RFC 9110 §12.5.3), `br`
 * first when they tie; null when neither is acceptable.
 */
export function negotiateEncoding (header: string): Coding | null {
  let best: Coding | null = null
  let bestQ = 0
  let star = -1
  const given: Partial<Record<Coding, number>> = {}
  for (const part of header.split(',')) {
    const [token = '', ...params] = part.split(';')
    const name = token.trim().toLowerCase()
    let q = 1
    for (const p of params) {
      const [k, v] = p.split('=')
      if (k?.trim().toLowerCase() === 'q') q = Number(v)
    }
    if (!(q >= 0 && q <= 1)) q = 0
    if (name === 'br' || name === 'gzip') given[name] = q
    else if (name === '*') star = q
  }
  for (const coding of ['br', 'gzip'] as const) {
    const q = given[coding] ?? (star >= 0 ? star : 0)
    if (q > bestQ) {
      best = coding
      bestQ = q
    }
  }
  return best
}

function decompressRequest (req: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (err: Error | null, body?: RequestPayload) => void): void {
  const coding = req.headers['content-encoding']
  if (coding === undefined || coding === 'identity') {
    done(null, payload)
    return
  }
  const make = DECOMPRESS[coding.toLowerCase()]
  if (make === undefined) {
    done(new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding "${coding}" is not supported; send br, gzip, deflate or identity.`))
    return
  }
  const stream = make()
  // Fastify's body limit counts the bytes that arrive; it reads this property to do so.
  const counted = Object.assign(stream, { receivedEncodedLength: 0 })
  payload.on('data', (chunk: Buffer) => { counted.receivedEncodedLength += chunk.length })
  pipeline(payload, stream, err => {
    if (err) stream.destroy(new AppError('BAD_REQUEST', `The body could not be decoded as ${coding}.`))
  })
  done(null, stream)
}

function compressResponse (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, body?: unknown) => void): void {
  // The common case first, at no cost: the client asked for no coding.
  const accepted = req.headers['accept-encoding']
  if (accepted === undefined || payload === null || payload === undefined || reply.hasHeader('content-encoding')) {
    done(null, payload)
    return
  }
  const isText = typeof payload === 'string'
  if (isText || Buffer.isBuffer(payload)) {
    const length = isText ? Buffer.byteLength(payload) : payload.length
    if (length < COMPRESSION_THRESHOLD) {
      done(null, payload)
      return
    }
  } else if (!(payload instanceof Readable)) {
    done(null, payload)
    return
  }
  const coding = negotiateEncoding(accepted)
  const type = reply.getHeader('content-type')
  if (coding === null || reply.statusCode === 206 || (typeof type === 'string' && !COMPRESSIBLE.test(type))) {
    done(null, payload)
    return
  }
  appendVary(reply, 'accept-encoding')
  reply.header('content-encoding', coding)
  if (payload instanceof Readable) {
    reply.removeHeader('content-length')
    const stream = COMPRESS_STREAM[coding]()
    pipeline(payload, stream, () => {})
    done(null, stream)
    return
  }
  const compressed = COMPRESS_SYNC[coding](payload as string | Buffer)
  reply.header('content-length', compressed.length)
  done(null, compressed)
}

/**
 * Contract §4, Accept-Encoding: `br` or `gzip` for bodies of 1 KiB and more (with
 * `Vary: Accept-Encoding`), nothing otherwise. Request bodies sent with a Content-Encoding
 * are decoded. Both hooks return at once when their header is absent: a request that asks
 * for no coding does no coding work (with @fastify/compress it paid for negotiation,
 * media-type checks and a hook per phase on every response).
 */
export const compressionPlugin = fp(async function compression (app: FastifyInstance) {
  app.addHook('preParsing', decompressRequest)
  app.addHook('onSend', compressResponse)
}, { name: 'compression' })
