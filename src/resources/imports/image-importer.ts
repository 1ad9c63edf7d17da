import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { AppError } from '../../errors.ts'
import type { EntryImages, ImageIntake, Services } from '../../http/contract/resources.ts'
import type { Store } from '../../store/store.ts'
import { type ImportReport, warn } from './import.ts'
import { fetchableUrl, fetchImage, ImageFetchError, type ImageFetchOptions } from './image-fetcher.ts'

/** Images of one post fetched at the same time, at most. */
const PARALLEL = 4

type Outcome = { readonly id: string, readonly url: string } | { readonly reason: string }

export interface ImageImporterOptions {
  readonly store: Store
  readonly config: Config
  readonly intake: ImageIntake
  /** Which images an entry shows, and the entry pointing at them once taken in (the collection's). */
  readonly images: EntryImages
  /** The services the intake works with (media's library). */
  readonly services: Services
  readonly fetch: ImageFetchOptions
  /** Whose media the images become: the admin importing. */
  readonly owner: string
  /** What the media it makes are stamped by (the composition root's). */
  readonly clock: Clock
  /** Called before each fetch: keeps the run's lease while a post's images take long (throws when it was lost). */
  readonly keepAlive: () => Promise<void>
  readonly log: FastifyBaseLogger
}

function filenameOf (url: string): string | null {
  try {
    const last = new URL(url).pathname.split('/').filter(s => s !== '').at(-1)
    return last === undefined ? null : decodeURIComponent(last)
  } catch {
    return null
  }
}

/**
 * An import run's images: each source URL fetched once per run (under the rules of webhooks'
 * URLs) and taken in as media, the post then pointing at them. An image that cannot be had is a
 * warning on the post, which keeps its URL; never a failure of the import.
 */
export class ImageImporter {
  private readonly seen = new Map<string, Promise<Outcome>>()

  constructor (private readonly opts: ImageImporterOptions) {}

  /** The entry with its images fetched in, its cover image (when taken) the media's; the same entry when none was taken. */
  async apply (entry: unknown, label: string, report: ImportReport): Promise<unknown> {
    const { urls: sources, cover } = this.opts.images.sources(entry)
    const urls = new Map<string, string>()
    let featureImage: string | undefined
    const queue = [...sources]
    const work = async () => {
      for (let src = queue.shift(); src !== undefined; src = queue.shift()) {
        const url = fetchableUrl(src)
        if (url === null) {
          if (!src.startsWith('data:')) warn(report, label, `Its image "${src.slice(0, 200)}" is not an absolute http(s) URL; it was not fetched and keeps its URL.`)
          continue
        }
        await this.opts.keepAlive()
        const outcome = await this.take(url, report)
        if ('reason' in outcome) {
          warn(report, label, `Its image ${url.slice(0, 300)} could not be fetched (${outcome.reason}); it keeps its URL.`)
          continue
        }
        urls.set(src, outcome.url)
        if (src === cover) featureImage = outcome.id
      }
    }
    await Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, work))
    return this.opts.images.withImages(entry, urls, featureImage)
  }

  private async take (url: string, report: ImportReport): Promise<Outcome> {
    let pending = this.seen.get(url)
    if (pending === undefined) {
      pending = this.fetchOne(url).then(outcome => {
        if ('reason' in outcome) report.media.failed++
        else report.media.imported++
        return outcome
      })
      this.seen.set(url, pending)
    }
    return await pending
  }

  private async fetchOne (url: string): Promise<Outcome> {
    const { store, services, config, intake, owner } = this.opts
    try {
      const bytes = await fetchImage(url, this.opts.fetch)
      const facts = await intake.add(store, services, bytes, { owner, filename: filenameOf(url), alt: '' }, config, this.opts.clock)
      return { id: facts.id, url: facts.url }
    } catch (err) {
      if (err instanceof ImageFetchError) return { reason: err.message }
      // Refused as an upload would be (not an image, too many pixels; or the storage out of reach): its problem's words.
      if (err instanceof AppError) return { reason: err.message }
      this.opts.log.warn({ err, url }, 'an imported image could not be stored')
      return { reason: 'it could not be stored; the logs have the details' }
    }
  }
}
