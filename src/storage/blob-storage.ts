import type { Readable } from 'node:stream'

/**
 * Where uploaded bytes live: a flat space of immutable blobs under string keys (the resource that keeps
 * uploads names them by the SHA-256 of their bytes, so identical bytes are stored once). Two adapters:
 * `local-blob-storage.ts` (files under a folder) and `s3-blob-storage.ts` (any S3-compatible store).
 *
 * A blob is either wholly there or not there: `put` never leaves a partial blob under its key,
 * whatever happens during the write (a crash, a stream error, a full disk).
 *
 * @example
 * const blobs = openBlobStorage({ kind: 'local', dir: '/var/lib/blog/blobs' })
 * await blobs.put('ab/cd…', Readable.from(bytes), { contentType: 'image/webp', length: bytes.length })
 * const body = await blobs.get('ab/cd…', { start: 0, end: 99 })   // the first 100 bytes, streamed
 * const head = await blobs.read('ab/cd…', { start: 0, end: 99 })  // the same, in one Buffer
 */
export interface BlobStorage {
  /** `local` or `s3`: for logs and the start-up line. */
  readonly kind: 'local' | 's3'
  /**
   * Stores `body` under `key`, replacing nothing that is there already (blobs are immutable: a
   * second put of the same key may keep the first). Resolves once the blob is durable.
   */
  put (key: string, body: Readable | Buffer, meta: BlobMeta): Promise<void>
  /** The blob's bytes, or bytes `start`–`end` (inclusive) of it; null when no such blob exists. */
  get (key: string, range?: ByteRange): Promise<Readable | null>
  /**
   * The blob's bytes, or bytes `start`–`end` (inclusive) of it, in one buffer; null when no such
   * blob exists. For small blobs: one read instead of a stream (`get` for anything large).
   */
  read (key: string, range?: ByteRange): Promise<Buffer | null>
  /** The blob's length in bytes, or null when no such blob exists. */
  stat (key: string): Promise<{ readonly bytes: number } | null>
  /** Removes the blob; removing one that is not there is not an error. */
  delete (key: string): Promise<void>
  /** Every key (for sweeps of blobs no row holds), in no particular order. */
  keys (): AsyncIterable<string>
  close (): Promise<void>
}

export interface BlobMeta {
  readonly contentType: string
  /** The length in bytes when known in advance (S3 takes it; local checks it). */
  readonly length?: number
}

export interface ByteRange {
  readonly start: number
  /** Inclusive. */
  readonly end: number
}

/** The storage is out of reach (network, credentials, a full disk): the request answers 503 or a problem, nothing recorded. */
export class BlobStorageUnavailableError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'BlobStorageUnavailableError'
  }
}

export type BlobStorageOptions =
  | { readonly kind: 'local', readonly dir: string }
  | {
    readonly kind: 's3'
    readonly bucket: string
    readonly region: string
    /** A non-AWS service's URL (`http://127.0.0.1:9000`); absent for AWS. */
    readonly endpoint?: string
    readonly accessKeyId?: string
    readonly secretAccessKey?: string
    readonly forcePathStyle: boolean
    /** A key prefix inside the bucket (tests give each run its own). */
    readonly prefix?: string
  }
