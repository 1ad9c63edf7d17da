import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import { fileTypeFromBuffer } from 'file-type'
import type { Metadata, OutputInfo, Sharp } from 'sharp'
import { rgbaToThumbHash, thumbHashToRGBA } from 'thumbhash'
import { AppError } from '../../errors.ts'
import { loadOnce } from '../../load-once.ts'

/** What the service stores and serves: judged by the bytes, never by a declared type or a name. */
export const FORMATS = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', avif: 'image/avif', gif: 'image/gif' } as const
export type Format = keyof typeof FORMATS
const BY_TYPE = new Map(Object.entries(FORMATS).map(([f, t]) => [t as string, f as Format]))
/** Declared types that say nothing about the content (a form's part without a type). */
const UNDECLARED = new Set(['', 'application/octet-stream'])

/** The placeholder's longest data URL. */
export const MAX_PLACEHOLDER = 2000

/**
 * Image work runs on libvips' threads, off the event loop; at most this many images are worked on
 * at once (the rest wait their turn, within their request's deadline), so a burst of uploads
 * cannot take every core and all memory from the requests that only read: half the cores, at least one.
 */
export const IMAGE_CONCURRENCY = Math.max(1, Math.floor(os.availableParallelism() / 2))

/**
 * sharp (libvips), loaded at the first image rather than at start-up: an instance that serves no
 * image work (most requests, every instance of a blog without uploads) does not hold its memory.
 */
const sharpLibrary = loadOnce(async () => {
  const { default: sharp } = await import('sharp')
  // Each image is read once: libvips' operation cache would only hold memory.
  sharp.cache(false)
  return sharp
})

/** How often, while images are worked on, libvips' new threads are looked for to lower their priority. */
const LOWER_EVERY_MS = 10
/** Threads looked at already (each thread's priority is lowered once, when it is first seen). */
const seenThreads = new Set<number>()

/**
 * Lowers libvips' worker threads to a low CPU priority (nice 10; Linux sets it per thread), so that
 * where images and requests share a core, the event loop gets about nine tenths of it and images
 * the rest: reads keep their latency while images are computed, and images still progress under a
 * saturated loop (at nice 19 they would get a sixtieth, and time out). Elsewhere it does nothing.
 */
function lowerImageThreads (): void {
  let tasks: string[]
  try {
    tasks = fs.readdirSync('/proc/self/task')
  } catch {
    return
  }
  for (const task of tasks) {
    const tid = Number(task)
    if (seenThreads.has(tid)) continue
    seenThreads.add(tid)
    try {
      if (fs.readFileSync(`/proc/self/task/${task}/comm`, 'latin1').startsWith('libvips')) os.setPriority(tid, os.constants.priority.PRIORITY_BELOW_NORMAL)
    } catch {
      // The thread ended meanwhile.
    }
  }
}

/** A counting semaphore: `run` waits for one of `size` slots; while any runs, libvips' threads are kept low. */
class Slots {
  private free: number
  private readonly waiting: (() => void)[] = []
  private lowering: NodeJS.Timeout | undefined
  constructor (private readonly size: number) { this.free = size }

  async run<T> (fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--
    else await new Promise<void>(resolve => { this.waiting.push(resolve) })
    if (process.platform === 'linux' && this.lowering === undefined) {
      lowerImageThreads()
      this.lowering = setInterval(lowerImageThreads, LOWER_EVERY_MS).unref()
    }
    try {
      return await fn()
    } finally {
      const next = this.waiting.shift()
      if (next !== undefined) next()
      else this.free++
      if (this.free === this.size && this.lowering !== undefined) {
        // Once more: threads the last computation started since the last look.
        lowerImageThreads()
        clearInterval(this.lowering)
        this.lowering = undefined
      }
    }
  }
}

const slots = new Slots(IMAGE_CONCURRENCY)

/** An upload made ready to store: its bytes without metadata, as seen (orientation applied). */
export interface ProcessedImage {
  readonly data: Buffer
  readonly format: Format
  readonly contentType: string
  readonly width: number
  readonly height: number
  readonly sha256: string
  readonly placeholder: string
}

function essence (contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase()
}

function unreadable (detail: string): AppError {
  return new AppError('IMAGE_UNREADABLE', detail)
}

/**
 * The format the bytes are (magic numbers), refusing with 415 what is none of FORMATS (SVG, text,
 * nothing at all) and a declared type that disagrees with the bytes.
 */
export async function judge (bytes: Buffer, declared: string | undefined): Promise<Format> {
  const found = bytes.length === 0 ? undefined : await fileTypeFromBuffer(bytes)
  const format = found === undefined ? undefined : BY_TYPE.get(found.mime)
  const accepted = Object.values(FORMATS).join(', ')
  if (format === undefined) {
    const what = found === undefined ? (bytes.length === 0 ? 'empty' : 'not an image the service recognises') : `${found.mime}`
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The file is ${what}; the service takes ${accepted}, judged by the bytes.`)
  }
  const d = essence(declared)
  if (!UNDECLARED.has(d) && d !== FORMATS[format]) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The file was declared as ${d} but its bytes are ${FORMATS[format]}.`)
  }
  return format
}

/**
 * Refuses an image with more than `maxPixels` pixels (all frames counted) from its header alone:
 * no decoder has run on it yet (a decompression bomb costs nothing).
 */
async function checkSize (bytes: Buffer, maxPixels: number): Promise<void> {
  const sharp = await sharpLibrary()
  let meta: Metadata
  try {
    meta = await sharp(bytes, { animated: true, limitInputPixels: false }).metadata()
  } catch (err) {
    throw unreadable(`The image's header cannot be read: ${(err as Error).message}.`)
  }
  const width = meta.width ?? 0
  const height = meta.pageHeight ?? meta.height ?? 0
  const pixels = width * height * (meta.pages ?? 1)
  if (width === 0 || height === 0) throw unreadable('The image declares no size.')
  if (pixels > maxPixels) throw unreadable(`The image has ${pixels} pixels (${width} × ${height}${(meta.pages ?? 1) > 1 ? ` × ${meta.pages} frames` : ''}); at most ${maxPixels} are accepted.`)
}

function encoder (image: Sharp, format: Format, quality?: number): Sharp {
  switch (format) {
    case 'jpeg': return image.jpeg({ quality: quality ?? 90 })
    case 'png': return image.png()
    case 'webp': return image.webp({ quality: quality ?? 90 })
    case 'avif': return image.avif({ quality: quality ?? 70, effort: 4 })
    case 'gif': return image.gif()
  }
}

/** A ThumbHash of the image, drawn back as a small PNG in a data URL (at most MAX_PLACEHOLDER characters). */
async function placeholderOf (image: Buffer): Promise<string> {
  const sharp = await sharpLibrary()
  const small = await sharp(image).resize(100, 100, { fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true })
  const hash = rgbaToThumbHash(small.info.width, small.info.height, small.data)
  const drawn = thumbHashToRGBA(hash)
  for (const side of [32, 24, 16, 8]) {
    const png = await sharp(Buffer.from(drawn.rgba), { raw: { width: drawn.w, height: drawn.h, channels: 4 } })
      .resize(side, side, { fit: 'inside' }).png({ compressionLevel: 9 }).toBuffer()
    const url = `data:image/png;base64,${png.toString('base64')}`
    if (url.length <= MAX_PLACEHOLDER) return url
  }
  throw new Error('no placeholder fits')
}

/**
 * Turns uploaded bytes into what is stored: judged (415), sized from the header (422), then decoded,
 * turned as its EXIF orientation says, and encoded again in its own format without metadata (EXIF,
 * GPS, XMP, comments). The same bytes give the same result: encoders run with fixed settings.
 */
export async function processUpload (bytes: Buffer, declared: string | undefined, maxPixels: number): Promise<ProcessedImage> {
  const format = await judge(bytes, declared)
  await checkSize(bytes, maxPixels)
  const sharp = await sharpLibrary()
  return await slots.run(async () => {
    let out: { data: Buffer, info: OutputInfo }
    try {
      const animated = format === 'gif' || format === 'webp'
      out = await encoder(sharp(bytes, { animated, limitInputPixels: maxPixels }).autoOrient(), format).toBuffer({ resolveWithObject: true })
    } catch (err) {
      throw unreadable(`The image cannot be decoded: ${(err as Error).message}.`)
    }
    const height = out.info.pageHeight ?? out.info.height
    return {
      data: out.data,
      format,
      contentType: FORMATS[format],
      width: out.info.width,
      height,
      sha256: createHash('sha256').update(out.data).digest('hex'),
      placeholder: await placeholderOf(out.data),
    }
  })
}

/** A variant of stored bytes: `width` wide at most (never wider than they are), in `format` at `quality`. */
export async function makeVariant (stored: Buffer, width: number, format: Format, quality: number): Promise<{ data: Buffer, sha256: string }> {
  const sharp = await sharpLibrary()
  return await slots.run(async () => {
    const animated = format === 'gif' || format === 'webp'
    const image = sharp(stored, { animated, limitInputPixels: false }).resize({ width, withoutEnlargement: true })
    const data = await encoder(image, format, quality).toBuffer()
    return { data, sha256: createHash('sha256').update(data).digest('hex') }
  })
}
