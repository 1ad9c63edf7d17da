import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AppError } from '../../../src/errors.ts'
import { applySchedule, isDue, sleepMs } from '../../../src/resources/posts/schedule.ts'
import type { PostInput } from '../../../src/resources/posts/post.ts'

const now = new Date('2030-01-01T12:00:00.000Z')
const later = '2030-01-01T12:00:00.001Z'
const earlier = '2030-01-01T11:59:59.999Z'
const input = (status: PostInput['status'], publishAt: string | null): PostInput => ({ title: 't', content: '', status, publishAt, tags: [], excerpt: null })

function codes (f: () => unknown): string[] {
  try {
    f()
  } catch (err) {
    assert.ok(err instanceof AppError)
    return (err.errors ?? []).map(e => `${e.field}:${e.code}`)
  }
  return []
}

describe('applySchedule', () => {
  it('accepts scheduled with a publish_at a millisecond ahead, and refuses one a millisecond behind or equal to now', () => {
    assert.deepEqual(applySchedule(input('scheduled', later), null, now), input('scheduled', later))
    assert.deepEqual(codes(() => applySchedule(input('scheduled', earlier), null, now)), ['publish_at:PUBLISH_AT_IN_PAST'])
    assert.deepEqual(codes(() => applySchedule(input('scheduled', now.toISOString()), null, now)), ['publish_at:PUBLISH_AT_IN_PAST'])
  })

  it('requires publish_at with scheduled', () => {
    assert.deepEqual(codes(() => applySchedule(input('scheduled', null), null, now)), ['publish_at:PUBLISH_AT_REQUIRED'])
    assert.deepEqual(codes(() => applySchedule({ title: 't', content: '', status: 'scheduled', tags: [], excerpt: null }, null, now)), ['publish_at:PUBLISH_AT_REQUIRED'])
  })

  it('refuses publish_at with every other status, and takes null as absent', () => {
    for (const status of ['draft', 'published', 'archived'] as const) {
      assert.deepEqual(codes(() => applySchedule(input(status, later), null, now)), ['publish_at:PUBLISH_AT_NOT_ALLOWED'], status)
      assert.deepEqual(applySchedule(input(status, null), null, now), input(status, null))
    }
  })

  it('clears the post\'s own publish_at when the status leaves scheduled (a GET-modify-PUT round trip)', () => {
    const current = { status: 'scheduled' as const, publishAt: later }
    assert.deepEqual(applySchedule(input('draft', later), current, now), input('draft', null))
    // The same instant written another way is the same publish_at.
    assert.deepEqual(applySchedule(input('published', '2030-01-01T13:00:00.001+01:00'), current, now), input('published', null))
    // Another time with another status is still refused.
    assert.deepEqual(codes(() => applySchedule(input('draft', '2030-01-02T00:00:00.000Z'), current, now)), ['publish_at:PUBLISH_AT_NOT_ALLOWED'])
    // A draft with no publish_at of its own clears nothing.
    assert.deepEqual(codes(() => applySchedule(input('draft', later), { status: 'draft', publishAt: null }, now)), ['publish_at:PUBLISH_AT_NOT_ALLOWED'])
  })

  it('keeps an unchanged schedule whose time has just passed (an edit racing the switch), but refuses to set a past one', () => {
    const due = { status: 'scheduled' as const, publishAt: earlier }
    assert.deepEqual(applySchedule(input('scheduled', earlier), due, now), input('scheduled', earlier))
    assert.deepEqual(codes(() => applySchedule(input('scheduled', '2029-12-31T00:00:00.000Z'), due, now)), ['publish_at:PUBLISH_AT_IN_PAST'])
    assert.deepEqual(codes(() => applySchedule(input('scheduled', earlier), { status: 'draft', publishAt: null }, now)), ['publish_at:PUBLISH_AT_IN_PAST'])
  })
})

describe('isDue', () => {
  it('is true from publish_at on, for scheduled posts only', () => {
    assert.equal(isDue({ status: 'scheduled', publishAt: now.toISOString() }, now), true)
    assert.equal(isDue({ status: 'scheduled', publishAt: later }, now), false)
    assert.equal(isDue({ status: 'draft', publishAt: null }, now), false)
  })
})

describe('sleepMs (the scheduler wakes for the next due time)', () => {
  it('sleeps until the next due time when it comes before the rescan bound', () => {
    assert.equal(sleepMs(new Date(now.getTime() + 1500), now, 60_000), 1500)
  })
  it('sleeps no longer than the rescan bound for a far-future post, or when nothing is scheduled', () => {
    assert.equal(sleepMs(new Date(now.getTime() + 30 * 86_400_000), now, 60_000), 60_000)
    assert.equal(sleepMs(null, now, 60_000), 60_000)
  })
  it('does not sleep when something is due already', () => {
    assert.equal(sleepMs(new Date(now.getTime() - 10), now, 60_000), 0)
    assert.equal(sleepMs(now, now, 60_000), 0)
  })
})
