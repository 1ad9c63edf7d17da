import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

/** How often a poll looks again, unless told. */
const EVERY_MS = 20

/**
 * Waits until `cond` holds, looking every `everyMs` (20 ms): a bounded poll for something to happen,
 * never a sleep for time to pass (a test moves a TestClock for that, test/support/clock.ts).
 * Fails the test, naming `what`, if it does not hold within `ms`.
 *
 * @example
 * await until(async () => (await t.store.webhooks.backlog()).pending === 0, 'the outbox to drain', 10_000)
 */
export async function until (cond: () => boolean | Promise<boolean>, what: string, ms = 60_000, everyMs = EVERY_MS): Promise<void> {
  const deadline = Date.now() + ms
  while (!await cond()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
    // The poll's own interval: the one sleep a poll is made of.
    await sleep(everyMs)
  }
}

/**
 * Reads until `done` holds for what was read, and gives that back; fails with the last value seen
 * after `ms`.
 */
export async function untilValue<T> (read: () => Promise<T>, done: (v: T) => boolean, ms = 60_000, everyMs = EVERY_MS): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await read()
    if (done(v)) return v
    assert.ok(Date.now() < deadline, `timed out; last seen ${JSON.stringify(v)}`)
    await sleep(everyMs)
  }
}
