import type { OutgoingHttpHeaders } from 'node:http'

/** One kept answer: its status, the headers that are the same for every reader, its body before content coding. */
export interface KeptAnswer {
  readonly status: number
  readonly headers: OutgoingHttpHeaders
  readonly body: string | Buffer
  /** Its strong validator ('' for a redirect). */
  readonly etag: string
  readonly lastModified?: Date | undefined
}

/** What a kept answer may hold at most, whatever the cache's size. */
const MAX_ENTRY_BYTES = 1024 * 1024

/**
 * The longest a kept answer is answered after this instance's last read of the event log began:
 * a change committed anywhere is read (and the cache emptied) by the first read that begins after
 * it, so an answer is never older than this behind the store. An instance that cannot read the log
 * (the store unreachable, its circuit open) stops answering from memory once this has passed.
 */
export const FRESH_MS = 1000

/**
 * While changes come more often than this on average (a write every few requests), an answer is
 * kept only once this long has passed since the last: it would be thrown away before it is read
 * again, and copying it costs more than it saves.
 */
export const BUSY_GAP_MS = 50

/**
 * This instance's bounded store of public answers, shared by the API's anonymous reads and the
 * reading site's pages (each under keys of its own), least recently used out first once full.
 * Emptied whole by any change that records an event (`clear`): a kept answer may show anything
 * the parts keep (what they publish, its people and images, the site's settings), and telling the
 * changes apart is not worth a stale page.
 * `clear` moves the generation on, so an answer whose making began before a change is never kept
 * (`keep` with the generation read when its request began).
 */
export class PublicCache {
  private readonly entries = new Map<string, KeptAnswer & { readonly bytes: number }>()
  private size = 0
  private gen = 0
  private lastClear = -Infinity
  /** The changes' average gap, in ms (weighted to the last few). */
  private meanGap = FRESH_MS
  readonly maxEntryBytes: number

  /**
   * @param lastRead `performance.now()` when this instance's last successful read of the event log
   *   began: while it is more than FRESH_MS ago, nothing is answered from memory.
   */
  constructor (readonly maxBytes: number, readonly maxEntries: number, private readonly lastRead: () => number) {
    this.maxEntryBytes = Math.min(maxBytes, MAX_ENTRY_BYTES)
  }

  get generation (): number { return this.gen }
  /** Bytes kept (bodies, headers and keys). */
  get bytes (): number { return this.size }
  get count (): number { return this.entries.size }

  /** Whether what is kept is known to be within FRESH_MS of the store. */
  get fresh (): boolean {
    return performance.now() - this.lastRead() <= FRESH_MS
  }

  /** The answer kept under `key`, if any and if the cache is fresh. */
  find (key: string): KeptAnswer | undefined {
    const kept = this.entries.get(key)
    if (kept === undefined || !this.fresh) return undefined
    // Most recently used last: the first out when full is the least used.
    this.entries.delete(key)
    this.entries.set(key, kept)
    return kept
  }

  /** Keeps `entry` under `key` unless it is too large or the cache changed since `generation`; false when not kept. */
  /** Whether an answer made since `generation` would be kept now (asked before gathering what to keep). */
  admits (generation: number): boolean {
    return generation === this.gen && !(this.meanGap < BUSY_GAP_MS && performance.now() - this.lastClear < BUSY_GAP_MS)
  }

  keep (key: string, generation: number, entry: KeptAnswer): boolean {
    if (!this.admits(generation)) return false
    // Bytes outside the JavaScript heap: what is kept costs the garbage collector nothing to mark
    // or move, and a hit writes them as they are, with no encoding.
    const body = typeof entry.body === 'string' ? Buffer.from(entry.body) : entry.body
    let bytes = 2 * key.length + body.length + 64
    for (const [name, value] of Object.entries(entry.headers)) bytes += name.length + String(value).length + 16
    if (bytes > this.maxEntryBytes) return false
    this.drop(key)
    while (this.entries.size > 0 && (this.size + bytes > this.maxBytes || this.entries.size >= this.maxEntries)) {
      this.drop(this.entries.keys().next().value!)
    }
    this.entries.set(key, { ...entry, body, bytes })
    this.size += bytes
    return true
  }

  /** Forgets everything: something any kept answer may have been made from has changed. */
  clear (): void {
    const now = performance.now()
    this.meanGap = 0.8 * this.meanGap + 0.2 * Math.min(now - this.lastClear, FRESH_MS)
    this.lastClear = now
    this.gen++
    this.entries.clear()
    this.size = 0
  }

  private drop (key: string): void {
    const old = this.entries.get(key)
    if (old === undefined) return
    this.entries.delete(key)
    this.size -= old.bytes
  }
}
