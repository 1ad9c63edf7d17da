import type { FastifyBaseLogger } from 'fastify'

/**
 * Background work that polls: `tick` runs until it reports nothing left to do, then the loop
 * sleeps `pollMs` (or until `wake()`). A failing tick (the store unreachable) is logged and tried
 * again after the poll interval; it never ends the loop or the process.
 */
export class PollLoop {
  private stopped = true
  private running: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null
  private resume: (() => void) | null = null
  private woken = false
  readonly controller = new AbortController()

  constructor (
    private readonly name: string,
    private readonly pollMs: number,
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
    if (this.woken) {
      this.woken = false
      return
    }
    await new Promise<void>(resolve => {
      this.resume = resolve
      this.timer = setTimeout(resolve, this.pollMs)
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
      } catch (err) {
        if (!this.stopped) this.log.warn({ err, loop: this.name }, 'background work failed; trying again at the next poll')
      }
      if (!more && !this.stopped) await this.sleep()
    }
  }
}
