import { type Clock, systemClock } from '../clock.ts'

/** A write of a leased run found the lease gone (ours lapsed; another instance holds the unit). */
export class LeaseLost extends Error {
  constructor () { super('the lease was lost to another instance') }
}

/**
 * A claimed unit's lease, as its run sees it: the end to write with its progress, and a signal
 * that fires when the app closes or the lease is lost.
 */
export class HeldLease {
  private readonly controller = new AbortController()
  private lostIt = false
  /** Fires when the app closes (the step's signal) or the lease is lost. */
  readonly signal: AbortSignal

  constructor (private readonly ms: number, stopping: AbortSignal, private readonly clock: Clock = systemClock) {
    this.signal = AbortSignal.any([stopping, this.controller.signal])
  }

  get lost (): boolean { return this.lostIt }

  /** The lease's end if renewed now: what a write that moves the run on sets. */
  until (): Date { return new Date(this.clock.now().getTime() + this.ms) }

  /** Another instance holds the unit (a renewal found out): the run is stopped. */
  markLost (): void {
    this.lostIt = true
    this.controller.abort(new LeaseLost())
  }

  /** A write found the lease gone: stops the run, nothing more written. */
  lose (): never {
    this.markLost()
    throw new LeaseLost()
  }

  /** Throws when the lease was lost (a renewal found out): a long step checks it between its writes. */
  throwIfLost (): void {
    if (this.lostIt) throw new LeaseLost()
  }
}
