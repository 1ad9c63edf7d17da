import type { FastifyBaseLogger } from 'fastify'
import type { Counter } from 'prom-client'
import type { Clock } from '../../../clock.ts'
import { type PostChanged, PostService } from '../post-service.ts'
import { SCHEDULE_CHANNEL, sleepMs } from '../schedule.ts'
import type { Store, UnitOfWork } from '../../../store/store.ts'
import type { PolledJob } from '../../../jobs/job.ts'

export interface PublishSchedulerOptions {
  readonly store: Store
  readonly log: FastifyBaseLogger
  readonly revisionsKeep: number
  /** The longest sleep without looking at the schedule (a missed signal is made up for by then). */
  readonly rescanMs: number
  /** Counts the switches this instance made. */
  readonly published?: Counter
  /** What each switch's unit of work tells of the change (its events: post.updated and post.published). */
  readonly changed?: (uow: UnitOfWork) => PostChanged
  /** What due times are compared with (the composition root's, src/context.ts). */
  readonly clock: Clock
}

/** Posts switched per pass; more due than this are taken in the next pass, at once. */
const BATCH = 100

/**
 * Publishes scheduled posts when their time comes. Any number of instances run
 * one each: every switch is a compare-and-set on the post's revision in a unit of work that also
 * records the revision (and the event), so one instance wins each post and the others find it
 * `stale` — published once, whatever the race. The scheduler sleeps until the earliest due time
 * (or `rescanMs`), wakes when any instance changes the schedule (the store's signal), and its first
 * pass at start-up publishes whatever fell due while no instance ran. It claims no lease: the
 * compare-and-set is its claim.
 */
export class PublishScheduler implements PolledJob {
  readonly name = 'schedule'
  private next: Date | null = null
  private unlisten: (() => Promise<void>) | null = null
  private readonly clock: Clock

  constructor (private readonly opts: PublishSchedulerOptions) {
    this.clock = opts.clock
  }

  /** Asked before each sleep: until the earliest due time, at most `rescanMs`. */
  readonly pollMs = (): number => sleepMs(this.next, this.clock.now(), this.opts.rescanMs)

  /** Any instance's change to the schedule (the store's signal) wakes it. */
  async start (wake: () => void): Promise<void> {
    this.unlisten = await this.opts.store.listen(SCHEDULE_CHANNEL, wake)
  }

  async stop (): Promise<void> {
    await this.unlisten?.()
    this.unlisten = null
  }

  async tick (signal: AbortSignal): Promise<boolean> {
    const { store, log } = this.opts
    const due = await store.posts.due(this.clock.now(), BATCH)
    for (const post of due) {
      if (signal.aborted) return false
      const published = await store.transaction(async uow => {
        const changed = this.opts.changed?.(uow)
        return await new PostService(uow, { revisionsKeep: this.opts.revisionsKeep, clock: this.clock, ...(changed ? { changed } : {}) }).publishScheduled(post)
      })
      if (published !== null) {
        this.opts.published?.inc()
        log.info({ post_id: post.id, revision: published.revision }, 'scheduled post published')
      }
    }
    if (due.length === BATCH) return true
    this.next = await store.posts.nextDue()
    return false
  }
}
