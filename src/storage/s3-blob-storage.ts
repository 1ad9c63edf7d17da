import { type Readable, Transform, type TransformCallback } from 'node:stream'
import type { S3ClientConfig } from '@aws-sdk/client-s3'
import {
  type BlobMeta,
  type BlobStorage,
  type BlobStorageOptions,
  BlobStorageUnavailableError,
  type ByteRange,
} from './blob-storage.ts'

/**
 * How long the store may take before it counts as out of reach. With two attempts per call, a
 * store that refuses connections fails a call in well under a second, one that drops them
 * (no answer to the TCP handshake) in about 2 × CONNECT_TIMEOUT_MS, one that accepts and then goes
 * silent in about 2 × IDLE_TIMEOUT_MS (or 2 × FIRST_BYTE_TIMEOUT_MS for a read): all far inside the
 * service's request deadline, so the request can still answer 503 with Retry-After.
 */
export const S3_TIMEOUTS = Object.freeze({
  /** A TCP (and TLS) connection must be made in this time. */
  CONNECT_TIMEOUT_MS: 1_000,
  /** A write: no byte either way for this long fails the attempt. */
  IDLE_TIMEOUT_MS: 3_000,
  /** A write: its answer must come within this, however fast bytes flow (a part is at most PART_BYTES). */
  WRITE_TIMEOUT_MS: 60_000,
  /** A read: the answer's headers must come within this. */
  FIRST_BYTE_TIMEOUT_MS: 3_000,
  /**
   * A read's body that stalls this long fails. Long, because a reader's backpressure (a slow client
   * of the service) pauses the socket just the same.
   */
  READ_IDLE_TIMEOUT_MS: 30_000,
  /** Attempts per call: one retry for a dropped connection or a 5xx, and no more, to keep the bound. */
  MAX_ATTEMPTS: 2,
})

/** Multipart uploads (streams of unknown length) send parts of this size, MAX_PARALLEL_PARTS at a time. */
const PART_BYTES = 8 * 1024 * 1024
const MAX_PARALLEL_PARTS = 2

type S3Options = Extract<BlobStorageOptions, { kind: 's3' }>

/** Thrown inside a put when the body's length differs from the one its meta declared. */
class LengthMismatchError extends Error {}

/**
 * Counts the bytes that pass, and fails the stream (so the upload never completes) when they do
 * not come to `expected`. Records whether the failure came from the body rather than the store.
 */
class Counted extends Transform {
  bytes = 0
  failed: Error | null = null

  constructor (private readonly expected: number | undefined) { super() }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length
    if (this.expected !== undefined && this.bytes > this.expected) {
      done(this.fail(new LengthMismatchError(`the body is longer than the ${this.expected} bytes declared`)))
      return
    }
    done(null, chunk)
  }

  override _flush (done: TransformCallback): void {
    if (this.expected !== undefined && this.bytes !== this.expected) {
      done(this.fail(new LengthMismatchError(`the body has ${this.bytes} bytes, not the ${this.expected} declared`)))
      return
    }
    done()
  }

  fail (err: Error): Error {
    this.failed ??= err
    return err
  }
}

/**
 * The bytes of `range` from a ranged answer. S3 sends exactly them; some S3-compatible stores send
 * the whole object (200, no Content-Range) or a wider range (s3rver answers `bytes=0-0` with every
 * byte), so the answer is cut to what was asked for rather than trusted.
 */
function exactly (body: Readable, range: ByteRange, contentRange: string | undefined): Readable {
  const sent = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange ?? '')
  const sentStart = sent === null ? 0 : Number(sent[1])
  const sentEnd = sent === null ? Infinity : Number(sent[2])
  if (sentStart === range.start && sentEnd === range.end) return body
  if (sentStart > range.start) {
    body.destroy()
    throw new BlobStorageUnavailableError(`the S3 store answered bytes ${contentRange} for ${range.start}–${range.end}`)
  }
  let skip = range.start - sentStart
  let left = range.end - range.start + 1
  const cut = new Transform({
    transform (chunk: Buffer, _encoding, done) {
      if (left === 0) {
        done()
        return
      }
      const from = Math.min(skip, chunk.length)
      skip -= from
      const part = chunk.subarray(from, from + left)
      left -= part.length
      if (left === 0) {
        this.push(part)
        this.push(null)
        body.unpipe(cut)
        body.destroy()
        done()
        return
      }
      done(null, part)
    },
  })
  body.on('error', err => { cut.destroy(err) })
  return body.pipe(cut)
}

interface SdkError { name?: string, code?: string, $metadata?: { httpStatusCode?: number } }

/** A 404 for the object itself (a missing bucket is a setting that is wrong, so the store is unusable). */
function isMissing (err: unknown): boolean {
  const e = err as SdkError
  if (e.name === 'NoSuchBucket') return false
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404
}

function unavailable (action: string, err: unknown): BlobStorageUnavailableError {
  if (err instanceof BlobStorageUnavailableError) return err
  const e = err as SdkError
  const status = e.$metadata?.httpStatusCode
  const why = status !== undefined ? `${e.name ?? 'error'} (HTTP ${status})` : (e.code ?? e.name ?? String(err))
  return new BlobStorageUnavailableError(`the S3 store could not ${action}: ${why}`, { cause: err })
}

function clientConfig (o: S3Options, http: NonNullable<S3ClientConfig['requestHandler']>): S3ClientConfig {
  return {
    region: o.region,
    ...(o.endpoint !== undefined ? { endpoint: o.endpoint } : {}),
    forcePathStyle: o.forcePathStyle,
    ...(o.accessKeyId !== undefined && o.secretAccessKey !== undefined
      ? { credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } }
      : {}),
    maxAttempts: S3_TIMEOUTS.MAX_ATTEMPTS,
    // Checksums only where S3 requires them: many S3-compatible stores reject the SDK's default
    // trailing checksums (aws-chunked bodies); the bytes are checked by their SHA-256 above this layer.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: http,
  }
}

/**
 * Blobs in an S3-compatible object store (AWS S3, MinIO, R2, …), under `prefix` in `bucket`.
 * A put is one PutObject, or a multipart upload that is aborted when it fails, so an object is
 * visible only once whole. (An abort that cannot reach the store leaves invisible parts behind: give
 * the bucket a lifecycle rule that aborts incomplete multipart uploads after a day.) The credentials
 * need s3:ListBucket besides s3:GetObject, s3:PutObject and s3:DeleteObject: without it S3 answers a
 * missing key 403, not 404, and a missing blob would look like a store out of reach. Any failure to
 * reach the store, or credentials it refuses, throws BlobStorageUnavailableError within the bounds
 * of S3_TIMEOUTS.
 *
 * @example
 * const blobs = await openS3BlobStorage({ kind: 's3', bucket: 'blog-uploads', region: 'auto',
 *   endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, accessKeyId, secretAccessKey })
 */
export async function openS3BlobStorage (options: S3Options): Promise<BlobStorage> {
  // Loaded here, not with the service: the SDK is ~20 MiB of memory a service keeping its blobs on disk does not need.
  const [{ DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, paginateListObjectsV2, S3Client }, { Upload }] =
    await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')])
  const { bucket } = options
  const prefix = options.prefix ?? ''
  // Two clients, because a read's body pauses whenever its reader applies backpressure: reads bound
  // the wait for the answer's headers tightly and a silent body loosely, writes bound every silence.
  const reads = new S3Client(clientConfig(options, {
    connectionTimeout: S3_TIMEOUTS.CONNECT_TIMEOUT_MS,
    requestTimeout: S3_TIMEOUTS.FIRST_BYTE_TIMEOUT_MS,
    socketTimeout: S3_TIMEOUTS.READ_IDLE_TIMEOUT_MS,
    throwOnRequestTimeout: true,
  }))
  const writes = new S3Client(clientConfig(options, {
    connectionTimeout: S3_TIMEOUTS.CONNECT_TIMEOUT_MS,
    socketTimeout: S3_TIMEOUTS.IDLE_TIMEOUT_MS,
    requestTimeout: S3_TIMEOUTS.WRITE_TIMEOUT_MS,
    throwOnRequestTimeout: true,
  }))
  const keyOf = (key: string) => prefix + key

  const blobs: BlobStorage = {
    kind: 's3',

    async put (key: string, body: Readable | Buffer, meta: BlobMeta): Promise<void> {
      if (Buffer.isBuffer(body) && meta.length !== undefined && body.length !== meta.length) {
        throw new LengthMismatchError(`the body has ${body.length} bytes, not the ${meta.length} declared`)
      }
      const counted = Buffer.isBuffer(body) ? null : new Counted(meta.length)
      if (counted !== null) {
        const source = body as Readable
        // pipeline() would destroy the source on a store failure; the caller owns it, so only forward.
        source.on('error', err => { counted.destroy(counted.fail(err)) })
        source.pipe(counted)
      }
      const upload = new Upload({
        client: writes,
        params: { Bucket: bucket, Key: keyOf(key), Body: counted ?? body, ContentType: meta.contentType },
        partSize: PART_BYTES,
        queueSize: MAX_PARALLEL_PARTS,
        leavePartsOnError: false,
      })
      try {
        await upload.done()
      } catch (err) {
        // The body's own failure (a client that went away, a wrong length) is the caller's to answer.
        if (counted?.failed != null) throw counted.failed
        throw unavailable('store the blob', err)
      }
    },

    async get (key: string, range?: ByteRange): Promise<Readable | null> {
      if (range !== undefined) {
        const { start, end } = range
        if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && end >= start)) {
          throw new RangeError(`bytes ${start}–${end} is not a range`)
        }
      }
      try {
        const answer = await reads.send(new GetObjectCommand({
          Bucket: bucket,
          Key: keyOf(key),
          ...(range !== undefined ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }))
        const body = answer.Body as Readable
        return range === undefined ? body : exactly(body, range, answer.ContentRange)
      } catch (err) {
        if (isMissing(err)) return null
        if ((err as SdkError).name === 'InvalidRange') {
          throw new RangeError(`bytes ${range?.start}–${range?.end} lie outside the blob`)
        }
        throw unavailable('read the blob', err)
      }
    },

    async read (key: string, range?: ByteRange): Promise<Buffer | null> {
      const body = await blobs.get(key, range)
      if (body === null) return null
      const chunks: Buffer[] = []
      try {
        for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk)
      } catch (err) {
        throw unavailable('read the blob', err)
      }
      return Buffer.concat(chunks)
    },

    async stat (key: string): Promise<{ readonly bytes: number } | null> {
      try {
        const head = await reads.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(key) }))
        return { bytes: head.ContentLength ?? 0 }
      } catch (err) {
        if (isMissing(err)) return null
        throw unavailable('look up the blob', err)
      }
    },

    async delete (key: string): Promise<void> {
      try {
        await writes.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) }))
      } catch (err) {
        if (isMissing(err)) return
        throw unavailable('delete the blob', err)
      }
    },

    async * keys (): AsyncIterable<string> {
      const pages = paginateListObjectsV2({ client: reads }, { Bucket: bucket, Prefix: prefix })
      try {
        for await (const page of pages) {
          for (const object of page.Contents ?? []) {
            if (object.Key !== undefined) yield object.Key.slice(prefix.length)
          }
        }
      } catch (err) {
        throw unavailable('list the blobs', err)
      }
    },

    async close (): Promise<void> {
      reads.destroy()
      writes.destroy()
    },
  }
  return blobs
}
