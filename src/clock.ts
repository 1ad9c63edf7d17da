/**
 * Where a rule that decides by time reads it: a TTL, a lease, a retry's backoff, a schedule, an
 * expiry. The composition root (src/context.ts) hands one clock to everything that does, so a test
 * gives a clock it advances instead of waiting for time to pass.
 *
 * It tells the time only: timers (a poll's sleep, a request's deadline, a sweep's interval) stay
 * on real time, and a test that moves the clock wakes what sleeps, or lets its poll come round.
 *
 * @example
 * const expiresAt = new Date(clock.now().getTime() + ttlMs)
 */
export interface Clock {
  /** The current time. */
  now (): Date
}

/** The machine's clock. */
export const systemClock: Clock = Object.freeze({ now: () => new Date() })
