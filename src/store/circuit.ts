/** Where the store's circuit stands: `closed` lets every request through, `open` none, `half-open` a probe. */
export type CircuitState = 'closed' | 'open' | 'half-open'

export interface CircuitOptions {
  /** Consecutive store failures (timeouts, refused or lost connections) that open the circuit. */
  readonly failures: number
  /** While open, how often a probe asks the store whether it answers again. */
  readonly probeEveryMs: number
}

/**
 * A circuit breaker on the store. After `failures` consecutive failures that say the store cannot
 * answer (isStoreUnavailable: a timeout, a refused or lost connection), the circuit opens: new
 * requests are answered 503 at once instead of each waiting out the store budget. While it is
 * open, a probe (`probe`, a `select 1`) runs every `probeEveryMs`; its state is `half-open` while
 * it runs, and the first store success closes the circuit again. Any success resets the count.
 *
 * @example
 * const circuit = new StoreCircuit({ failures: 5, probeEveryMs: 1000 }, () => store.ping())
 * if (circuit.state === 'open') throw unavailable()
 */
export class StoreCircuit {
  private current: CircuitState = 'closed'
  private consecutive = 0
  private timer: NodeJS.Timeout | null = null
  private stopped = false
  /** How many times the circuit has opened since start. */
  opened = 0

  constructor (private readonly opts: CircuitOptions, private readonly probe: () => Promise<unknown>) {}

  get state (): CircuitState {
    return this.current
  }

  /** Consecutive failures so far (0 after any success). */
  get failures (): number {
    return this.consecutive
  }

  /** A statement or connection the store answered. */
  succeeded (): void {
    this.consecutive = 0
    if (this.current !== 'closed') {
      this.current = 'closed'
      this.clearTimer()
    }
  }

  /** A statement or connection that failed because the store cannot answer. */
  failed (): void {
    this.consecutive++
    if (this.current === 'closed' && this.opts.failures > 0 && this.consecutive >= this.opts.failures) this.open()
  }

  /** Stops probing (the store is closing). */
  stop (): void {
    this.stopped = true
    this.clearTimer()
  }

  private open (): void {
    this.current = 'open'
    this.opened++
    this.schedule()
  }

  private schedule (): void {
    if (this.stopped || this.timer !== null) return
    this.timer = setTimeout(() => {
      this.timer = null
      if (this.current !== 'open') return
      this.current = 'half-open'
      // The probe's own statement reports its outcome (succeeded or failed) like any other.
      this.probe().then(() => { this.succeeded() }, () => {
        if (this.current === 'half-open') {
          this.current = 'open'
          this.schedule()
        }
      })
    }, this.opts.probeEveryMs)
    this.timer.unref()
  }

  private clearTimer (): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }
}
