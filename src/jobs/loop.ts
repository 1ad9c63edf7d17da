import type { FastifyBaseLogger } from 'fastify'

const MAX_BACKOFF_MS = 30_000

/**
 * Background work that polls: `tick` runs until it reports nothing left to do, then the loop
 * sleeps `pollMs` (or until `wake()`, or until the time `tick` names if that is sooner). A failing tick (the store unreachable) is logged and tried
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
    private readonly pollMs: number,
    private readonly log: FastifyBaseLogger,
    private readonly tick: (signal: AbortSignal) => Promise<boolean | Date>
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

  private async sleep (due: Date | null): Promise<void> {
    if (this.woken && this.failures === 0) {
      this.woken = false
      return
    }
    const poll = Math.min(MAX_BACKOFF_MS, this.pollMs * 2 ** this.failures)
    const ms = due === null ? poll : Math.max(0, Math.min(poll, due.getTime() - Date.now()))
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
      let next: boolean | Date = false
      try {
        next = await this.tick(this.controller.signal)
        this.failures = 0
      } catch (err) {
        if (!this.stopped) this.log.warn({ err, loop: this.name }, 'background work failed; trying again later')
        this.failures = Math.min(this.failures + 1, 16)
      }
      if (next !== true && !this.stopped) await this.sleep(next === false ? null : next)
    }
  }
}
