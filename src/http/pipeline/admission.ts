/**
 * The queue of requests read but not yet started, and the rule that sheds from it: CoDel (RFC 8289)
 * on the time a request waited in the queue, its sojourn time.
 *
 * Node reads every readable connection in one turn of the event loop and would start each request
 * as it is read; under overload a turn grows until it holds seconds of work, and everything that
 * waits behind it does so in the kernel, unseen: the sockets' buffers, and the accept queue, from
 * which libuv takes one connection per turn of the loop. Here a request read once the turn has
 * served `sliceMs` of work waits in this queue instead, and the queue serves `sliceMs` of work per
 * later turn (at least one request), so the loop keeps polling its sockets and accepting
 * connections while it works through the queue, and the wait is where it can be measured: a
 * request's sojourn runs from when it was read. Light load never queues: a request read in a turn
 * that has served less than `sliceMs` starts at once.
 *
 * What is shed, and when: a sojourn over `targetMs` is overload only once sojourns have stayed
 * over it for `intervalMs` (CoDel's standing queue). A single long turn (a stall, one slow
 * request) is not: the requests read after it start with a sojourn of zero. A client's own
 * concurrency is not either while its queue stays under the target (a closed loop of 64
 * connections queues at most 64 requests). Once overloaded, every request whose sojourn is over
 * the target is shed as the queue reaches it (a 503 costs a small part of serving), so the queue
 * drains to the target and what is served waited at most `targetMs`; the overload ends once
 * nothing has been shed for `intervalMs`.
 *
 * The clock and the end of a turn are parameters, so the rule is tested by driving it, not by
 * timing it.
 */
export interface AdmissionOptions {
  /** The sojourn over which, standing for `intervalMs`, requests are shed. */
  targetMs: number
  /** How long sojourns over the target must stand before they are overload (default 100 ms). */
  intervalMs?: number
  /** The work a turn serves from the queue before the loop polls its sockets again (default 2 ms). */
  sliceMs?: number
  /**
   * Milliseconds the loop has spent blocked in disk syncs so far (src/loop-stalls.ts: SQLite's
   * COMMIT): a turn after such a stall serves `STALL_SHARE` times it, up to `MAX_SLICE_MS`.
   */
  stalledMs?: () => number
  now?: () => number
  /** Arms a call at the end of this turn of the loop (setImmediate); a test drives turns itself. */
  endOfTurn?: (fn: () => void) => void
}

interface Queued<T> { item: T, since: number }

/** The most steps a turn arms (each an armed callback; one that finds nothing to do costs well under a microsecond). */
const MAX_STEPS = 32
/** The most requests a step starts together. */
const MAX_BATCH = 16

/**
 * A turn serves at least this many times the disk sync that blocked the loop since the last turn,
 * so that syncing takes at most about a third of the loop. The writes of a turn share one COMMIT
 * (src/store/group-commit.ts), whose sync costs about the same for 5 writes as for 25: with a
 * 2 ms slice, creates came in groups of ~7, each followed by a ~1.6 ms sync, and the loop spent
 * more of its time syncing and starting background work per group than serving (creates 0.8×
 * the throughput of a queue whose turns were ~20 ms long).
 */
const STALL_SHARE = 2
/** The longest slice a sync earns (a checkpoint's long sync is not repeated every turn). */
const MAX_SLICE_MS = 16

export class AdmissionQueue<T> {
  private readonly targetMs: number
  private readonly intervalMs: number
  private readonly sliceMs: number
  private readonly stalledMs: () => number
  /** This turn's slice (sliceMs, or more after a sync), and the stall counter when it was set. */
  private turnSliceMs: number
  private stalledAtTurn = 0
  private readonly now: () => number
  private readonly endOfTurn: (fn: () => void) => void
  private items: Queued<T>[] = []
  private head = 0
  /** When sojourns over the target, if they go on, become overload (null: the last was within it). */
  private overloadAt: number | null = null
  /** Whether the queue sheds what waited over the target (sojourns stood over it for intervalMs). */
  shedding = false
  /** When the last request was shed. */
  private lastShedAt = -Infinity
  /**
   * The mean time the loop spends on a request: a step's time, from its start to the next step's,
   * the awaits of what it started included, over the requests it started. It follows a dearer
   * step at once by half the difference, and a cheaper one by a sixteenth, so that a step's batch
   * overshoots its share at most briefly when dearer requests come.
   */
  private costMs = 0
  /** When this turn started serving, and whether its end is armed. */
  private turnStart = 0
  private turnArmed = false
  /** The steps armed for the end of this turn that have not run yet, and when the last one started the requests it served (and how many). */
  private stepsLeft = 0
  private servedAtStep: number | null = null
  private servedInStep = 0
  /** This turn's steps: when the first one started, what they have served, and whether they only accept. */
  private stepsStart = 0
  private servedInSteps = 0
  private acceptOnly = false
  /** Whether this turn accepted a connection, and when the queue was last served. */
  private acceptedInTurn = false
  private acceptedLastTurn = false
  private lastServedAt = -Infinity

  constructor (opts: AdmissionOptions, private readonly serve: (item: T) => void, private readonly shed: (item: T) => void,
    private readonly gone: (item: T) => boolean = () => false) {
    this.targetMs = opts.targetMs
    this.intervalMs = opts.intervalMs ?? 100
    this.sliceMs = opts.sliceMs ?? 2
    this.turnSliceMs = this.sliceMs
    this.stalledMs = opts.stalledMs ?? (() => 0)
    this.now = opts.now ?? (() => performance.now())
    this.endOfTurn = opts.endOfTurn ?? (fn => { setImmediate(fn) })
  }

  get length (): number {
    return this.items.length - this.head
  }

  /**
   * A request read now: started at once if nothing waits and the turn has work to spare; shed at
   * once while shedding, if the work queued ahead of it already exceeds the target (it would be
   * shed when its turn came, and its connection is worth more to its client free now: an open
   * loop opens a new connection for every request it sends while all of its own are busy); else
   * queued.
   */
  offer (item: T): void {
    const now = this.now()
    this.markTurn(now)
    if (this.length === 0 && !this.accepting() && now - this.turnStart < this.turnSliceMs) {
      this.judge(0, now)
      this.serve(item)
      return
    }
    if (this.shedding && this.length * this.costMs > this.targetMs) {
      this.lastShedAt = now
      this.shed(item)
      return
    }
    this.items.push({ item, since: now })
  }

  /**
   * The end of a turn: the next one serves from the queue, in steps. Its slice is
   * sliceMs, or STALL_SHARE times the disk sync that blocked the loop since the last turn was
   * marked; enough steps are armed for the slice at the mean cost of a request (at least two, so
   * that what the first starts is measured; at most MAX_STEPS).
   */
  private markTurn (now: number): void {
    if (this.turnArmed) return
    this.turnArmed = true
    this.turnStart = now
    const stalled = this.stalledMs()
    this.turnSliceMs = Math.min(MAX_SLICE_MS, Math.max(this.sliceMs, STALL_SHARE * (stalled - this.stalledAtTurn)))
    this.stalledAtTurn = stalled
    // At least two: a request's cost is measured by the step after the one that served it.
    const steps = this.costMs > 0 ? Math.min(MAX_STEPS, Math.max(2, Math.ceil(this.turnSliceMs / this.costMs))) : MAX_STEPS
    this.stepsLeft = steps
    for (let i = 0; i < steps; i++) this.endOfTurn(this.drain)
  }

  /**
   * A connection taken from the kernel's accept queue this turn. libuv takes one per turn of the
   * loop, so while connections arrive faster than turns end, the kernel's queue holds them, their
   * requests unread and their wait unseen: under an open loop the accept queue, not this one, held
   * the backlog (seconds of it, no request ever waiting here long enough to be shed).
   */
  accepted (): void {
    this.acceptedInTurn = true
    this.markTurn(this.now())
  }

  /** Whether connections are being accepted turn after turn: more may wait in the kernel. */
  private accepting (): boolean {
    return this.acceptedInTurn || this.acceptedLastTurn
  }

  /**
   * One step of a turn's share of the queue: starts the requests at its head, as many as the
   * rest of the turn's slice holds at their mean cost (`costMs`; one while it is unknown, at most
   * MAX_BATCH), unless the turn has served sliceMs already (a turn always serves one). A
   * request's work goes on after it is started, in the promise callbacks of its hooks and
   * handler, which run once the step that started it has returned and before the next step: so
   * the next step measures what this one started, awaits included, and each step is one armed
   * callback (setImmediate). Requests waiting over the target while shedding are shed on the way,
   * taking none of the slice. The last armed step arms the next turn.
   *
   * What a step starts is bounded by the measured cost, never by the clock as the requests start:
   * a request's work after its first `await` is not seen until the step returns (~30 µs of a
   * 2 ms request is before it). Started while the clock said the slice had room, a step's
   * requests were the whole queue: turns of 150 ms under a closed loop of 64 connections, 500 ms
   * and more under an open loop, while the kernel's accept queue overflowed. Started one per step,
   * cheap requests cost ~10% more CPU each (a callback and a check of the microtask queue per
   * request); started a few together, their work interleaves for at most about the slice.
   *
   * A turn that accepted a connection serves nothing, unless sliceMs has passed since the queue
   * was last served: turns that only accept and read are short, so the kernel's accept queue
   * empties at many times the rate of one connection per served request, and the backlog waits
   * here, where its sojourn is seen and shed.
   */
  readonly drain = (): void => {
    const start = this.now()
    if (this.turnArmed) {
      // The turn's first step.
      this.turnArmed = false
      this.stepsStart = start
      this.servedInSteps = 0
      this.servedAtStep = null
      this.acceptOnly = this.accepting() && start - this.lastServedAt < this.sliceMs
      this.acceptedLastTurn = this.acceptedInTurn
      this.acceptedInTurn = false
    } else if (this.servedAtStep !== null) {
      // The requests the previous step started, their promise callbacks included.
      const cost = (start - this.servedAtStep) / this.servedInStep
      this.costMs = this.costMs === 0 ? cost : this.costMs + (cost - this.costMs) / (cost > this.costMs ? 2 : 16)
      this.servedAtStep = null
    }
    const last = --this.stepsLeft <= 0
    // As many as the slice's rest holds at the mean cost; one while no cost is known yet.
    const batch = this.costMs > 0 ? Math.min(MAX_BATCH, Math.max(1, Math.floor((this.turnSliceMs - (start - this.stepsStart)) / this.costMs))) : 1
    this.servedInStep = 0
    while (this.length > 0) {
      const now = this.now()
      const next = this.items[this.head]!
      if (this.gone(next.item)) {
        this.take()
        continue
      }
      const sojourn = now - next.since
      const sheds = this.shedding && sojourn > this.targetMs
      if (!sheds && (this.acceptOnly || (this.servedInSteps > 0 && now - this.stepsStart >= this.turnSliceMs))) break
      this.take()
      if (this.judge(sojourn, now) === 'serve') {
        this.servedInSteps++
        this.servedAtStep ??= now
        this.serve(next.item)
        if (++this.servedInStep >= batch) break
        continue
      }
      this.shed(next.item)
    }
    if (this.servedAtStep !== null) this.lastServedAt = this.now()
    if (last && this.length > 0) this.markTurn(this.now())
  }

  private take (): void {
    this.items[this.head++] = undefined as unknown as Queued<T>
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }

  /** The rule, on each request as it leaves the queue (or starts at once): serve or shed. */
  judge (sojourn: number, now: number): 'serve' | 'shed' {
    if (sojourn <= this.targetMs) {
      this.overloadAt = null
      // The overload ends once nothing has had to be shed for an interval: ending it at the first
      // request within the target made every overload stand for another interval before it was
      // shed again, and served waits up to the target plus the interval, over and over.
      if (this.shedding && now - this.lastShedAt >= this.intervalMs) this.shedding = false
      return 'serve'
    }
    if (!this.shedding) {
      this.overloadAt ??= now + this.intervalMs
      if (now < this.overloadAt) return 'serve'
      this.shedding = true
    }
    this.lastShedAt = now
    return 'shed'
  }
}
