import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

/** How often a poll looks again. */
const EVERY_MS = 20

/**
 * Waits until `cond` holds, looking every 20 ms: a bounded poll, never a sleep for time to pass.
 * Fails the test, naming `what`, if it does not hold within `ms`.
 */
export async function until (cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await cond()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
    await sleep(EVERY_MS)
  }
}

/** Reads until `done` holds for what was read, and gives that back; fails with the last value seen after `ms`. */
export async function untilValue<T> (read: () => Promise<T>, done: (v: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await read()
    if (done(v)) return v
    assert.ok(Date.now() < deadline, `timed out; last seen ${JSON.stringify(v)}`)
    await sleep(EVERY_MS)
  }
}
