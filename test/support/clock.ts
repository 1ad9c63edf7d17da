import type { Clock } from '../../src/clock.ts'

/**
 * A clock for tests: it stands still at the time it was made (or `start`) and moves only when the
 * test moves it, so a TTL, a lease, a retry or a schedule is passed by `advance(ms)`, exactly, not
 * waited for. Hand it to the app with `buildTestApp(kind, env, { clock })`.
 *
 * @example
 * const clock = new TestClock()
 * const t = await buildTestApp('sqlite', {}, { clock })
 * clock.advance(24 * 3600_000) // a day later, at once
 */
export class TestClock implements Clock {
  private ms: number

  constructor (start: Date = new Date()) {
    this.ms = start.getTime()
  }

  now (): Date {
    return new Date(this.ms)
  }

  /** Moves the time `ms` forward (never back: nothing the service keeps expects time to run backwards). */
  advance (ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`a test clock moves forward only, not by ${ms} ms`)
    this.ms += ms
  }

  /** Moves the time to `date`, which must not be earlier than now. */
  set (date: Date): void {
    this.advance(date.getTime() - this.ms)
  }
}
