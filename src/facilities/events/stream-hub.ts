import type { ServerResponse } from 'node:http'
import { isAdmin, type Principal } from '../../domain/principal.ts'
import type { PolledJob } from '../../jobs/job.ts'
import type { Store, StoredEvent } from '../../store/store.ts'
import { eventJson } from './events.ts'

/** Events read per query, live or catching up. */
const PAGE = 500
/** A comment line on every stream this often: at least every 15 s, with room for a busy loop. */
export const HEARTBEAT_MS = 10_000
/**
 * A reader this far behind (bytes waiting in its socket) is ended; it resumes with Last-Event-ID.
 * It bounds what slow readers can hold: 1 000 streams at most 256 MiB.
 */
const MAX_BUFFERED = 256 * 1024

/** An event as a stream sends it, made once per event whatever the number of streams. */
export interface Framed {
  readonly event: StoredEvent
  readonly text: string
}

export function frame (e: StoredEvent): Framed {
  return { event: e, text: `id: ${e.id}\nevent: ${e.type}\ndata: ${eventJson(e)}\n\n` }
}

/** One open stream: who reads it, what it wants, and the last event id it was sent. */
export class EventStream {
  /** Events the hub brought while the stream was still reading the past. */
  private held: Framed[] | null = []

  constructor (
    readonly res: ServerResponse,
    private readonly principal: Principal,
    private readonly types: ReadonlySet<string> | null,
    public cursor: number
  ) {}

  /** Admin sees every event; others those of published posts and of their own resources. Pings are for one subscription, never here. */
  private wants (e: StoredEvent): boolean {
    if (e.webhookId !== null) return false
    if (this.types !== null && !this.types.has(e.type)) return false
    return e.public || e.owner === this.principal.subject || isAdmin(this.principal)
  }

  /** Events the hub read: held while the stream still reads the past, else written. */
  send (events: readonly Framed[]): void {
    if (this.held !== null) this.held.push(...events)
    else this.past(events)
  }

  /**
   * Writes what is new and wanted, in id order; each event at most once. Each frame's text is one
   * string shared by every stream (not a copy per stream), and the writes of a call leave in one
   * writev.
   */
  past (events: readonly Framed[]): void {
    this.res.cork()
    try {
      for (const f of events) {
        if (f.event.id <= this.cursor) continue
        this.cursor = f.event.id
        if (this.wants(f.event)) this.write(f.text)
        if (this.res.writableEnded) return
      }
    } finally {
      process.nextTick(() => { this.res.uncork() })
    }
  }

  /** The past has been read: what the hub brought meanwhile follows it. */
  caughtUp (): void {
    const held = this.held ?? []
    this.held = null
    this.past(held)
  }

  write (text: string): void {
    if (this.res.writableEnded) return
    if (this.res.writableLength > MAX_BUFFERED) {
      this.res.end()
      return
    }
    this.res.write(text)
  }
}

/**
 * The instance's reader of the event log for its open streams: one query every EVENTS_POLL_MS
 * whoever and however many are listening (polling, on both databases: events committed on any
 * instance reach every instance's streams within one poll; see docs/events.md), and one heartbeat
 * timer for all of them. Its reading is a job of this instance's own (`job`), run on every
 * instance, background work or not: its streams are its own.
 */
export class StreamHub {
  private readonly streams = new Set<EventStream>()
  /** In-process readers of every event the hub reads (listen). */
  private readonly listeners = new Set<(events: readonly StoredEvent[]) => void>()
  private cursor = 0
  private readBegan = -Infinity
  private heartbeat: NodeJS.Timeout | null = null
  private joining: Promise<void> | null = null
  /** The reading of the log, every `pollMs`, with the heartbeat beside it. */
  readonly job: PolledJob

  constructor (private readonly store: Store, pollMs: number, private readonly changed: (open: number) => void) {
    this.job = {
      name: 'event-streams',
      pollMs,
      runsOn: 'instance',
      start: () => {
        this.heartbeat = setInterval(() => { for (const s of this.streams) s.write(': keep-alive\n\n') }, HEARTBEAT_MS)
        this.heartbeat.unref()
      },
      tick: async () => await this.tick(),
      stop: async () => { this.end() },
    }
  }

  get open (): number { return this.streams.size }

  /**
   * `performance.now()` when the hub's last successful read of the log began (-Infinity before
   * any): every event committed before then has reached its streams and listeners.
   */
  get lastRead (): number { return this.readBegan }

  /** Ends every stream (shutdown): clients reconnect elsewhere with Last-Event-ID. */
  end (): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat)
    this.heartbeat = null
    for (const s of this.streams) s.res.end()
    this.streams.clear()
  }

  /** The newest event id: a stream without a position starts after it. */
  async newest (): Promise<number> {
    return await this.store.events.lastId()
  }

  /**
   * Adds a stream and sends it the past from its cursor on, then everything the hub reads. Its
   * events are held from the moment it joins until the past is read, so none falls between.
   */
  async join (stream: EventStream): Promise<void> {
    // The stream reads the past itself.
    await this.wake()
    this.streams.add(stream)
    this.changed(this.streams.size)
    stream.res.once('close', () => {
      this.streams.delete(stream)
      this.changed(this.streams.size)
    })
    for (;;) {
      const page = await this.store.events.list(stream.cursor, PAGE)
      if (page.length === 0) break
      stream.past(page.map(frame))
      if (page.length < PAGE) break
    }
    stream.caughtUp()
  }

  /**
   * Calls `fn` with every batch of events the hub reads from now on (committed on any instance,
   * within one poll), in id order; resolves to a function that stops it. A listener that throws
   * does not stop the others, nor the streams.
   */
  async listen (fn: (events: readonly StoredEvent[]) => void): Promise<() => void> {
    await this.wake()
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /** Nobody reads: the hub reads nothing, and its cursor is stale. */
  private get idle (): boolean {
    return this.streams.size === 0 && this.listeners.size === 0
  }

  /** Before the first reader joins an idle hub: it starts from the newest event (joins at once share one read). */
  private async wake (): Promise<void> {
    if (this.idle) {
      this.joining ??= (async () => {
        const began = performance.now()
        this.cursor = await this.store.watch.events.lastId()
        this.readBegan = began
      })().finally(() => { this.joining = null })
    }
    await this.joining
  }

  private async tick (): Promise<boolean> {
    // While the store's circuit is open its answer is known; the probe, not this, tells when it heals.
    if (this.idle || this.store.circuit.state !== 'closed') return false
    const began = performance.now()
    const events = await this.store.watch.events.list(this.cursor, PAGE)
    if (events.length === 0) {
      this.readBegan = began
      return false
    }
    this.cursor = events.at(-1)!.id
    for (const fn of this.listeners) {
      try {
        fn(events)
      } catch {
        // A listener's failure is its own; the streams still get the events.
      }
    }
    const framed = this.streams.size === 0 ? [] : events.map(frame)
    for (const s of this.streams) s.send(framed)
    // A full page leaves more to read: what is kept is known fresh once the log is read to its end.
    if (events.length < PAGE) this.readBegan = began
    return events.length === PAGE
  }
}
