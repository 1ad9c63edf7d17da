import { fieldError, type FieldError, validationFailed } from '../../errors.ts'
import type { PostStatus } from './post.ts'

/** The signal a unit of work sends when it changes the schedule, so every instance's scheduler looks again. */
export const SCHEDULE_CHANNEL = 'blog_post_schedule'

/** What the scheduling rules look at in the post being changed. */
export interface Scheduled {
  readonly status: PostStatus
  readonly publishAt: string | null
}

function sameInstant (a: string | null | undefined, b: string | null): boolean {
  return a != null && b !== null && Date.parse(a) === Date.parse(b)
}

/**
 * `publish_at` goes with status `scheduled` and nothing else, and lies in the future.
 * `current` is the post being changed (null on create). Two readings make a GET-modify-write
 * round trip work: the `publish_at` the post already has, sent back with another status, means
 * the status left `scheduled` and the time is cleared; sent back with `scheduled`, it keeps the
 * schedule even if that time has just passed (the switch is due, and publishes the edited post).
 * Anything else breaking the rules is one 422 naming `publish_at`.
 */
export function applySchedule<T extends { status: PostStatus, publishAt?: string | null | undefined }> (input: T, current: Scheduled | null, now: Date): T {
  const kept = current?.status === 'scheduled' && sameInstant(input.publishAt, current.publishAt)
  if (input.status !== 'scheduled' && kept) return { ...input, publishAt: null }
  const errors = scheduleErrors(input, now, kept)
  if (errors.length > 0) throw validationFailed(errors)
  return input
}

function scheduleErrors (input: { status: PostStatus, publishAt?: string | null | undefined }, now: Date, kept: boolean): FieldError[] {
  if (input.status !== 'scheduled') {
    return input.publishAt == null ? [] : [fieldError('publish_at', 'PUBLISH_AT_NOT_ALLOWED', `publish_at is only for status scheduled, not ${input.status}; leave it out or null.`)]
  }
  if (input.publishAt == null) return [fieldError('publish_at', 'PUBLISH_AT_REQUIRED')]
  if (!kept && Date.parse(input.publishAt) <= now.getTime()) {
    return [fieldError('publish_at', 'PUBLISH_AT_IN_PAST', `publish_at (${input.publishAt}) is not in the future (it is now ${now.toISOString()}).`)]
  }
  return []
}

/** Whether a scheduled post's time has come. */
export function isDue (post: Scheduled, now: Date): boolean {
  return post.status === 'scheduled' && post.publishAt !== null && Date.parse(post.publishAt) <= now.getTime()
}

/**
 * How long the scheduler may sleep: until the next due time, but never longer than `maxMs` (a
 * post scheduled meanwhile on another instance for earlier is found by then), and not at all
 * when something is due already.
 */
export function sleepMs (nextDue: Date | null, now: Date, maxMs: number): number {
  if (nextDue === null) return maxMs
  return Math.max(0, Math.min(maxMs, nextDue.getTime() - now.getTime()))
}
