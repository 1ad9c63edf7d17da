import type { FastifyBaseLogger } from 'fastify'
import { PollLoop } from './loop.ts'

/**
 * Background work a resource declares (as it declares its routes): every instance runs it, and
 * the instances share it through the store, each unit of it claimed under a lease that a dead
 * instance lets expire.
 *
 * @example
 * const publisher: Job = {
 *   name: 'reminders',
 *   pollMs: () => msUntilNextDue,          // asked before each sleep
 *   async tick (signal) {
 *     const due = await store.transaction(uow => uow.reminders.claimDue(new Date(), LEASE_MS))
 *     if (due === null) return false        // sleep pollMs()
 *     await publish(due, signal)
 *     return true                           // more may be waiting
 *   },
 * }
 */
export interface Job {
  /** Names its loop in logs, and what `wake` takes. */
  readonly name: string
  /**
   * How long an idle job sleeps before it looks again (a wake ends the sleep sooner); a function
   * is asked before each sleep, so work that knows when it is next due sleeps until then.
   */
  readonly pollMs: number | (() => number)
  /**
   * One step: claim a unit of work through the store, under a lease, and do it. Resolves with
   * `true` to step again at once, `false` to sleep `pollMs`. It ends soon once `signal` fires
   * (the app is closing). A step that throws is logged and retried after a backoff.
   */
  tick (signal: AbortSignal): Promise<boolean>
}

/** Wakes a job now rather than at its next poll: call it after committing work for it. */
export interface JobWaker {
  wake (name: string): void
}

/** Background work that is not a Job's polled steps (a sender, a listener): started and stopped with the jobs. */
export interface BackgroundWork {
  start (): void | Promise<void>
  stop (): Promise<void>
}

/**
 * The webhook outbox's sender, one per instance (a facility's `outbox`): background work that
 * `wake()` sends now rather than at its next poll, after a commit that queued a delivery.
 */
export interface WebhookOutbox extends BackgroundWork {
  wake (): void
}

/** Where background work is handed to be run (or not: see JobRunner). */
export interface Background {
  run (work: BackgroundWork): void
}

/**
 * This instance's background work: started once the app is ready, stopped (each step finished)
 * when it closes; on an instance that does not run it (`enabled` false: BACKGROUND_WORK=false),
 * never started, and a wake does nothing: another instance does the work, found in the store.
 */
export class JobRunner implements JobWaker, Background {
  private readonly loops = new Map<string, PollLoop>()
  private readonly others: BackgroundWork[] = []
  private started = false

  constructor (private readonly log: FastifyBaseLogger, readonly enabled = true) {}

  run (work: BackgroundWork): void { this.others.push(work) }

  add (job: Job): void {
    if (this.loops.has(job.name)) throw new Error(`two jobs are named ${job.name}`)
    this.loops.set(job.name, new PollLoop(job.name, job.pollMs, this.log, async signal => await job.tick(signal)))
  }

  wake (name: string): void {
    const loop = this.loops.get(name)
    if (loop === undefined) throw new Error(`no job is named ${name}`)
    loop.wake()
  }

  async start (): Promise<void> {
    if (!this.enabled || this.started) return
    this.started = true
    for (const loop of this.loops.values()) loop.start()
    for (const work of this.others) await work.start()
  }

  async stop (): Promise<void> {
    if (!this.started) return
    this.started = false
    await Promise.all([...this.loops.values()].map(async loop => { await loop.stop() }))
    await Promise.all(this.others.map(async work => { await work.stop() }))
  }
}
