/**
 * The queue of requests read but not yet started, and the rule that sheds from it (a CoDel-style
 * controller: RFC 8289's idea of a standing queue, with the queue timeout of Facebook's servers).
 *
 * Node reads every readable connection in one turn of the event loop and starts each request as
 * it is read; under overload a turn grows until it holds seconds of work, and the connections
 * that wait behind it (in the kernel: libuv takes one new connection from the accept queue per
 * turn) are answered, 200 or 503, only after it. Here a request read once the turn has served
 * `sliceMs` of work waits in this queue instead, and the queue serves `sliceMs` of work per later
 * turn, so the loop keeps polling its sockets and accepting connections while it works through
 * the queue. Light load never queues: a request read in a turn with less than `sliceMs` of work
 * behind it starts at once.
 *
 * What is shed, and when: a request's wait is the time since its bytes could have arrived (the
 * caller's estimate at reading) plus its time in the queue. A wait over `maxWaitMs` is overload
 * only once waits have stayed over it for `intervalMs`: a single long turn (a stall, one slow
 * request) delays the requests behind it, but they are served, since the queue empties again at
 * once and shedding them would not have made the stall shorter. Once waits have stood over
 * `maxWaitMs` for `intervalMs`, the queue sheds every request that has waited more than
 * `targetMs` (a 503 costs a small part of serving), so that those it serves are served fast and
 * the queue drains; it stops at the first request that waited `targetMs` or less, and resumes at
 * the first that waited more than half of `maxWaitMs` within 10 intervals of that (the overload
 * has not ended). A closed loop
 * (each client waits for its answer before it sends again) queues at most one request per client,
 * and is never shed while that queue's wait is under `maxWaitMs`.
 *
 * The clock is a parameter, so the rule is tested by driving it, not by timing it.
 */
export interface AdmissionOptions {
  maxWaitMs: number
  intervalMs: number
  targetMs: number
  sliceMs: number
  now?: () => number
  /** Arms a call at the end of this turn of the loop (setImmediate); a test drives turns itself. */
  endOfTurn?: (fn: () => void) => void
}

interface Queued<T> { item: T, since: number }

export class AdmissionQueue<T> {
  private readonly now: () => number
  private readonly endOfTurn: (fn: () => void) => void
  private items: Queued<T>[] = []
  private head = 0
  /** When waits over maxWaitMs, if they go on, become overload (null: the last wait was under it). */
  private overloadAt: number | null = null
  /** Whether the queue is shedding (waits stood over maxWaitMs for intervalMs). */
  shedding = false
  /**
   * Until when an overload that ended is remembered: a wait over half of maxWaitMs by then resumes
   * the shedding at once (CoDel resumes its drop rate the same way), or every overload would serve
   * waits up to maxWaitMs + intervalMs again before it is shed again. (Half, not targetMs: a
   * closed loop whose waits sit near the target right after an overload is not shed by it.)
   */
  private recentUntil = -Infinity
  /** When this turn started serving (the first request it served), and whether its end is armed. */
  private turnStart = 0
  private turnArmed = false
  /** When the last turn's share of the queue ended (-1: no share served yet). */
  private lastDrainEnd = -1

  constructor (readonly opts: AdmissionOptions, private readonly serve: (item: T) => void, private readonly shed: (item: T) => void,
    private readonly gone: (item: T) => boolean = () => false) {
    this.now = opts.now ?? (() => performance.now())
    this.endOfTurn = opts.endOfTurn ?? (fn => { setImmediate(fn) })
  }

  get length (): number {
    return this.items.length - this.head
  }

  /** A request read now, that had waited `waitedMs` before it was read. */
  offer (item: T, waitedMs: number): void {
    const now = this.now()
    this.markTurn(now)
    if (this.length === 0 && now - this.turnStart < this.opts.sliceMs) {
      this.act(item, waitedMs, now)
      return
    }
    this.items.push({ item, since: now - waitedMs })
  }

  /** The end of a turn: the next one serves from the queue. */
  private markTurn (now: number): void {
    if (this.turnArmed) return
    this.turnArmed = true
    this.turnStart = now
    this.endOfTurn(this.drain)
  }

  /**
   * Serves the queue until the turn has served its share (what it started at once counts; at
   * least one request, so the queue always moves; shedding costs little and is not counted), then
   * arms the next turn's share and yields to the loop. The share is sliceMs, or four times what
   * the loop spent since the last share (reading sockets, accepting, answering), if more: serving
   * keeps four fifths of the loop however many connections it has to read.
   */
  readonly drain = (): void => {
    const now0 = this.now()
    // Work this turn started at once (the queue was empty when its requests were read).
    const inline = this.turnArmed && this.lastDrainEnd < 0 ? Math.max(0, now0 - this.turnStart) : 0
    const share = this.lastDrainEnd < 0 ? this.opts.sliceMs : Math.max(this.opts.sliceMs, 4 * (now0 - this.lastDrainEnd))
    this.turnArmed = false
    if (this.length === 0) {
      this.lastDrainEnd = -1
      return
    }
    let served = 0
    while (this.length > 0) {
      const now = this.now()
      const next = this.items[this.head]!
      if (this.gone(next.item)) {
        this.take()
        continue
      }
      if (served > 0 && inline + now - now0 >= share && !this.sheds(now - next.since)) break
      this.take()
      if (this.act(next.item, now - next.since, now)) served++
    }
    this.lastDrainEnd = this.now()
    if (this.length > 0) this.markTurn(this.lastDrainEnd)
  }

  private take (): void {
    this.items[this.head++] = undefined as unknown as Queued<T>
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }

  /** Whether a request that waited `waited` would be shed now (without changing the state). */
  private sheds (waited: number): boolean {
    return this.shedding && waited > this.opts.targetMs
  }

  /** Serves or sheds `item`; true when served. */
  private act (item: T, waited: number, now: number): boolean {
    if (this.judge(waited, now) === 'serve') {
      this.serve(item)
      return true
    }
    this.shed(item)
    return false
  }

  /** The rule, on each request as it leaves the queue (or starts at once): serve or shed. */
  judge (waited: number, now: number): 'serve' | 'shed' {
    if (this.shedding) {
      if (waited > this.opts.targetMs) return 'shed'
      // Drained to the target: no standing queue any more.
      this.shedding = false
      this.overloadAt = null
      this.recentUntil = now + 10 * this.opts.intervalMs
      return 'serve'
    }
    if (waited > this.opts.maxWaitMs / 2 && now < this.recentUntil) {
      this.shedding = true
      return 'shed'
    }
    if (waited <= this.opts.maxWaitMs) {
      this.overloadAt = null
      return 'serve'
    }
    if (this.overloadAt === null) {
      this.overloadAt = now + this.opts.intervalMs
      return 'serve'
    }
    if (now < this.overloadAt) return 'serve'
    this.shedding = true
    return 'shed'
  }
}
