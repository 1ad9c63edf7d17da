/** A page as rendered once: what any later request for the same key is answered with. */
export interface CachedPage {
  readonly status: number
  readonly body: string
  readonly etag: string
  readonly location?: string
}

/** At most this much rendered HTML is kept per instance (bytes of the UTF-16 strings, about). */
export const PAGE_CACHE_BYTES = 32 * 1024 * 1024
/** And at most this many pages. */
export const PAGE_CACHE_ENTRIES = 5000

/**
 * This instance's rendered pages, keyed by what decides their bytes (the path with its query), least
 * recently used first out once full. Emptied whole by any change committed on any instance (the
 * event log, read by the events facility's hub): a page shows articles, tags, authors, images and
 * the settings, so any event may alter it, and telling them apart is not worth a stale page. A render
 * that began before a change is not kept (its generation is past).
 */
export class PageCache {
  private readonly entries = new Map<string, CachedPage>()
  private bytes = 0
  private gen = 0

  constructor (private readonly maxBytes = PAGE_CACHE_BYTES, private readonly maxEntries = PAGE_CACHE_ENTRIES) {}

  /** Changes with every `clear`: a render taken at one generation is kept only while it lasts. */
  get generation (): number { return this.gen }

  get size (): number { return this.entries.size }

  get (key: string): CachedPage | undefined {
    const page = this.entries.get(key)
    if (page !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, page)
    }
    return page
  }

  set (key: string, page: CachedPage, generation: number): void {
    if (generation !== this.gen) return
    const size = weight(key, page)
    if (size > this.maxBytes / 16) return
    const old = this.entries.get(key)
    if (old !== undefined) this.drop(key, old)
    while (this.entries.size > 0 && (this.bytes + size > this.maxBytes || this.entries.size >= this.maxEntries)) {
      const [oldest, p] = this.entries.entries().next().value as [string, CachedPage]
      this.drop(oldest, p)
    }
    this.entries.set(key, page)
    this.bytes += size
  }

  clear (): void {
    this.entries.clear()
    this.bytes = 0
    this.gen++
  }

  private drop (key: string, page: CachedPage): void {
    this.entries.delete(key)
    this.bytes -= weight(key, page)
  }
}

function weight (key: string, page: CachedPage): number {
  return 2 * (key.length + page.body.length + page.etag.length + (page.location?.length ?? 0)) + 64
}
