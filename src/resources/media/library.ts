import { randomBytes } from 'node:crypto'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { Counter, type Registry } from 'prom-client'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { unavailable } from '../../http/protocol/problems.ts'
import { type BlobStorage, BlobStorageUnavailableError } from '../../storage/blob-storage.ts'
import { openBlobStorage } from '../../storage/open-blob-storage.ts'
import type { Repositories, Store } from '../../store/store.ts'
import { type Format, makeVariant } from './image.ts'
import { blobKey, type VariantKey } from './store.ts'

/** How long one instance may take to compute a variant before another may take over (it died). */
export const VARIANT_LEASE_MS = 20_000
/** How often a request waiting for another instance's computation looks whether it is ready. */
const VARIANT_POLL_MS = 50
/** A claim on a blob being written outlives the request that writes it (its deadline) by this much. */
const CLAIM_MARGIN_MS = 60_000
/** Files up to this size are read in one buffer (and kept in the cache); larger ones are streamed. */
export const SMALL_BLOB_BYTES = 1024 * 1024
/** Ready variants remembered (their digest and size), so that a read of one asks the store for the media only. */
const READY_VARIANTS = 10_000

/**
 * What the media routes and jobs of one app share: the storage, the small blobs held in memory,
 * the variants known ready, and the count of variant computations.
 */
export interface Library {
  readonly blobs: Promise<BlobStorage>
  readonly cache: BlobCache
  readonly ready: Map<string, { readonly sha256: string, readonly bytes: number }>
  readonly computations: Counter
  /** What claims and leases are timed by. */
  readonly clock: Clock
}

declare module '../../http/contract/resources.ts' {
  interface Services {
    /** The media's storage and counters, one per app. */
    readonly mediaLibrary: Library
  }
}

/**
 * Small blobs in memory, the least recently read dropped first, within `maxBytes`. A blob never
 * changes under its digest, so a kept copy is never stale; concurrent misses share one read.
 */
export class BlobCache {
  private readonly held = new Map<string, Buffer>()
  private readonly loading = new Map<string, Promise<Buffer | null>>()
  private size = 0

  constructor (private readonly maxBytes: number) {}

  async get (key: string, load: () => Promise<Buffer | null>): Promise<Buffer | null> {
    const hit = this.held.get(key)
    if (hit !== undefined) {
      // Map keeps insertion order: taken out and put back, the entry becomes the most recent.
      this.held.delete(key)
      this.held.set(key, hit)
      return hit
    }
    let pending = this.loading.get(key)
    if (pending === undefined) {
      pending = load().then(bytes => {
        this.loading.delete(key)
        if (bytes !== null) this.keep(key, bytes)
        return bytes
      }, (err: unknown) => {
        this.loading.delete(key)
        throw err
      })
      this.loading.set(key, pending)
    }
    return await pending
  }

  private keep (key: string, bytes: Buffer): void {
    if (bytes.length > this.maxBytes) return
    this.held.set(key, bytes)
    this.size += bytes.length
    for (const [k, b] of this.held) {
      if (this.size <= this.maxBytes) break
      this.held.delete(k)
      this.size -= b.length
    }
  }
}

/** The app's library: made once by the resource's services, handed to its routes and jobs. */
export function openLibrary (config: Config, metrics: Registry, clock: Clock): Library {
  const blobs = openBlobStorage(config.media.storage)
  // A storage that cannot be opened is reported by the requests that need it (503), not by an unhandled rejection.
  blobs.catch(() => {})
  const library: Library = {
    blobs,
    cache: new BlobCache(config.media.cacheBytes),
    ready: new Map(),
    computations: new Counter({ name: 'media_variant_computations_total', help: 'Image variants computed on this instance', registers: [metrics] }),
    clock,
  }
  return library
}

/** Runs storage work, answering 503 with Retry-After when the storage is out of reach. */
export async function storage<T> (library: Library, fn: (blobs: BlobStorage) => Promise<T>): Promise<T> {
  try {
    return await fn(await library.blobs)
  } catch (err) {
    if (err instanceof BlobStorageUnavailableError) throw unavailable('SERVICE_UNAVAILABLE', `The file storage is out of reach (${err.message}); nothing was recorded.`)
    throw err
  }
}

/**
 * Bytes `from`–`to` of the blob of `sha256`, `size` bytes long: a small blob read whole in one
 * buffer (from memory when the cache holds it), a large one streamed from the storage.
 */
export function blobBytes (library: Library, sha256: string, size: number, from: number, to: number): AsyncIterable<Uint8Array> | Promise<Buffer> {
  const key = blobKey(sha256)
  if (size > SMALL_BLOB_BYTES) return streamed(library, key, from, to)
  return library.cache.get(key, async () => await storage(library, async blobs => await blobs.read(key))).then(bytes => {
    if (bytes === null) throw new Error(`blob ${sha256} is missing`)
    return from === 0 && to === bytes.length - 1 ? bytes : bytes.subarray(from, to + 1)
  })
}

async function * streamed (library: Library, key: string, from: number, to: number): AsyncGenerator<Uint8Array> {
  const body = await storage(library, async blobs => await blobs.get(key, { start: from, end: to }))
  if (body === null) throw new Error(`blob ${key} is missing`)
  yield * (body as AsyncIterable<Uint8Array>)
}

export async function readAll (body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of body as AsyncIterable<Buffer>) chunks.push(c)
  return Buffer.concat(chunks)
}

/**
 * Writes `data` as the blob of `sha256`, claimed in the store first so that a sweep running
 * meanwhile keeps it; the claim is returned, to be let go in the unit of work that records the
 * row holding the blob (a crash before that leaves a claim that expires, and the sweep removes the blob).
 */
export async function writeBlob (library: Library, store: Repositories, sha256: string, data: Buffer, contentType: string, deadlineMs: number): Promise<string> {
  const token = randomBytes(16).toString('base64url')
  const key = blobKey(sha256)
  await store.media.claimBlob(token, key, new Date(library.clock.now().getTime() + deadlineMs + CLAIM_MARGIN_MS))
  await storage(library, async blobs => { await blobs.put(key, data, { contentType, length: data.length }) })
  return token
}

/**
 * After a row holding the blob committed: a sweep that found the blob unheld just before may have
 * removed it; it is written again, so that a row never points at a missing blob.
 */
export async function ensureBlob (library: Library, sha256: string, data: Buffer, contentType: string): Promise<void> {
  const blobs = await library.blobs
  if (await blobs.stat(blobKey(sha256)) === null) await blobs.put(blobKey(sha256), data, { contentType, length: data.length })
}

/**
 * The variant `k` of the media whose stored bytes are `original`: read when it exists; else computed
 * by exactly one request across every instance (the one that takes the lease in the store), while
 * the others wait for it; a lease whose holder died runs out and is taken over.
 */
export async function variantOf (library: Library, store: Store, k: VariantKey, original: string, contentType: string, deadlineMs: number, signal: AbortSignal): Promise<{ sha256: string, bytes: number }> {
  const name = `${k.mediaId}/${k.width}/${k.format}/${k.quality}`
  const known = library.ready.get(name)
  if (known !== undefined) return known
  for (;;) {
    signal.throwIfAborted()
    const found = await store.media.variant(k)
    if (found?.state === 'ready') return remember(library, name, found)
    const token = randomBytes(16).toString('base64url')
    const now = library.clock.now()
    if (found === null || Date.parse(found.leaseUntil) < now.getTime()) {
      if (await store.media.claimVariant(k, token, new Date(now.getTime() + VARIANT_LEASE_MS), now)) {
        try {
          const source = await storage(library, async blobs => await blobs.read(blobKey(original)))
          if (source === null) throw new Error(`the blob of ${k.mediaId} is missing`)
          const made = await makeVariant(source, k.width, k.format as Format, k.quality)
          library.computations.inc()
          const claim = await writeBlob(library, store, made.sha256, made.data, contentType, deadlineMs)
          const done = await store.transaction(async uow => {
            const ok = await uow.media.finishVariant(k, token, made.sha256, made.data.length)
            await uow.media.releaseBlob(claim)
            return ok
          })
          if (done) {
            await ensureBlob(library, made.sha256, made.data, contentType)
            return remember(library, name, { sha256: made.sha256, bytes: made.data.length })
          }
        } catch (err) {
          await store.media.releaseVariant(k, token).catch(() => {})
          throw err
        }
        continue
      }
    }
    await sleep(VARIANT_POLL_MS, undefined, { signal })
  }
}

/**
 * Remembers a ready variant: it never changes while its media exists (a deleted media's reads stop
 * at its row, which every read looks up; media ids are never reused).
 */
function remember (library: Library, name: string, v: { readonly sha256: string, readonly bytes: number }): { sha256: string, bytes: number } {
  const ready = { sha256: v.sha256, bytes: v.bytes }
  if (library.ready.size >= READY_VARIANTS) library.ready.delete(library.ready.keys().next().value!)
  library.ready.set(name, ready)
  return ready
}
