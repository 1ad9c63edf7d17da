import type { FastifyBaseLogger } from 'fastify'

const MAX_BACKOFF_MS = 30_000

/** A failing tick of a loop that sleeps until a time it computes is retried after this, doubling. */
const RETRY_BASE_MS = 1000

/**
 * Background work that polls: `tick` runs until it reports nothing left to do, then the loop
 * sleeps `pollMs` (or until `wake()`). `pollMs` may be a function, asked before each sleep: work
 * that knows when it is next due (the scheduler) sleeps until then instead of polling. A failing tick (the store unreachable) is logged and tried
 * again, after a wait that doubles with each failure in a row (at most 30 s); it never ends the
 * loop or the process.
 */
export class PollLoop {
  private stopped = true
  private running: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null
  private resume: (() => void) | null = null
  private woken = false
  private failures = 0
  readonly controller = new AbortController()

  constructor (
    private readonly name: string,
    private readonly pollMs: number | (() => number),
    private readonly log: FastifyBaseLogger,
    private readonly tick: (signal: AbortSignal) => Promise<boolean>
  ) {}

  start (): void {
    if (!this.stopped) return
    this.stopped = false
    this.running = this.run()
  }

  /** Looks for work now rather than at the next poll (a job was just made on this instance). */
  wake (): void {
    this.woken = true
    this.resume?.()
  }

  /** Stops after the current tick, which sees the abort signal; resolves when the loop has ended. */
  async stop (): Promise<void> {
    this.stopped = true
    this.controller.abort()
    this.resume?.()
    await this.running
  }

  private async sleep (): Promise<void> {
    if (this.woken && this.failures === 0) {
      this.woken = false
      return
    }
    const fixed = typeof this.pollMs === 'number'
    const ms = this.failures > 0
      ? Math.min(MAX_BACKOFF_MS, (fixed ? this.pollMs as number : RETRY_BASE_MS) * 2 ** this.failures)
      : (fixed ? this.pollMs as number : (this.pollMs as () => number)())
    await new Promise<void>(resolve => {
      this.resume = resolve
      this.timer = setTimeout(resolve, ms)
    })
    if (this.timer) clearTimeout(this.timer)
    this.resume = null
    this.woken = false
  }

  private async run (): Promise<void> {
    while (!this.stopped) {
      let more = false
      try {
        more = await this.tick(this.controller.signal)
        this.failures = 0
      } catch (err) {
        if (!this.stopped) this.log.warn({ err, loop: this.name }, 'background work failed; trying again later')
        this.failures = Math.min(this.failures + 1, 16)
      }
      if (!more && !this.stopped) await this.sleep()
    }
  }
}
