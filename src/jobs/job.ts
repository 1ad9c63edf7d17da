import type { FastifyBaseLogger } from 'fastify'
import { HeldLease, LeaseLost } from './lease.ts'
import { PollLoop } from './loop.ts'
import { type Clock, systemClock } from '../clock.ts'

/**
 * What every job declares: its name (what `wake` takes, and its loop's name in logs), how long it
 * sleeps when idle, where it runs, what else wakes it, and what its stop leaves to do.
 */
interface JobBase {
  readonly name: string
  /**
   * How long an idle job sleeps before it looks again (a wake ends the sleep sooner); a function
   * is asked before each sleep, so work that knows when it is next due sleeps until then.
   */
  readonly pollMs: number | (() => number)
  /**
   * `deployment` (the default): work the instances share through the store, run only on those
   * with BACKGROUND_WORK on. `instance`: this instance's own (its open streams), run on every one.
   */
  readonly runsOn?: 'deployment' | 'instance'
  /**
   * Before its first step: subscribes to what wakes it besides `jobs.wake(name)` (a store's
   * signal). `wake` ends its sleep.
   */
  start? (wake: () => void): void | Promise<void>
  /**
   * After its last step ended (the runner aborted the step's signal and waited for it): writes
   * what it still holds, closes what it opened.
   */
  stop? (): Promise<void>
}

/**
 * A job of polled steps.
 *
 * @example
 * const indexer: PolledJob = {
 *   name: 'search-index',
 *   pollMs: 1000,
 *   async tick (signal) { return await indexSome(signal) },   // true: more is waiting, step again at once
 * }
 */
export interface PolledJob extends JobBase {
  readonly lease?: undefined
  /**
   * One step. Resolves with `true` to step again at once, `false` to sleep `pollMs`. It ends soon
   * once `signal` fires (the app is closing). A step that throws is logged and tried again after
   * a backoff that doubles with each failure in a row.
   */
  tick (signal: AbortSignal): Promise<boolean>
}

/** How a leased job's units are held: how long a claim lasts, and what the runner does with it. */
export interface Lease<U> {
  /** How long a claim lasts unless renewed: an instance that dies lets it lapse, and another claims the unit. */
  readonly ms: number
  /**
   * Renews the unit's lease until `until`: false when another instance holds it now. The runner
   * renews every third of `ms` while the unit runs. Absent: a run is bounded well below `ms`.
   */
  renew? (unit: U, until: Date): Promise<boolean>
  /** The app closed during the run: gives the unit back at once, without counting the run. Absent: its lease lapses. */
  handBack? (unit: U): Promise<void>
  /** The run threw (not a stop, not a lost lease): tries it again later, or gives it up. Absent: its lease lapses. */
  failed? (unit: U, err: unknown): Promise<void>
  /** The lease was lost to another instance (ours lapsed): that one runs the unit; nothing more is written. */
  lost? (unit: U): void
  /** The unit's fields in the runner's log lines (`{ reminder_id: 7 }`). */
  fields? (unit: U): Record<string, unknown>
}

/**
 * A job whose work comes in units that instances share by claiming each under a lease (an export,
 * an import, a batch of deliveries). It declares the claim and the run; the runner does the rest:
 * renews the lease while the unit runs, stops the run when the app closes or the lease is lost,
 * and hands the unit back or fails it. An operation a client starts and polls is declared on
 * OperationJob (operation.ts), which is one of these.
 *
 * @example
 * const reminders: LeasedJob<Reminder> = {
 *   name: 'reminders',
 *   pollMs: 60_000,
 *   lease: { ms: 30_000, renew: async (r, until) => await store.reminders.renew(r, until) },
 *   claim: async (now, ms) => await store.transaction(uow => uow.reminders.claim(now, ms)),
 *   async run (r, held) {
 *     await send(r, held.signal)
 *     if (!await store.reminders.sent(r)) held.lose()        // another instance took it
 *   },
 * }
 */
export interface LeasedJob<U> extends JobBase {
  readonly lease: Lease<U>
  /** Claims one unit under a lease of `leaseMs` (after giving up those whose leases lapsed too often), or null: none is due. */
  claim (now: Date, leaseMs: number): Promise<U | null>
  /**
   * Does the unit. `held.until()` is the lease's end to write with progress (each write that finds
   * the lease gone calls `held.lose()`); `held.signal` fires when the app closes or the lease is lost.
   */
  run (unit: U, held: HeldLease): Promise<void>
}

/** Background work a part declares in its `jobs`: polled steps, or leased units. */
// `unknown`: each leased job's units are its own; the runner only hands them back to it.
export type Job = PolledJob | LeasedJob<unknown>

/** Wakes a job now rather than at its next poll: call it after committing work for it. */
export interface JobWaker {
  wake (name: string): void
}

/** Renewals per lease: a unit's lease is renewed every third of it while it runs. */
const RENEWALS_PER_LEASE = 3

/**
 * This instance's jobs: started once the app is ready, stopped (each step finished, then each
 * job's `stop`) when it closes. On an instance that does not run the deployment's work (`enabled`
 * false: BACKGROUND_WORK=false) only the jobs that run on every instance start, and a wake of
 * another does nothing: another instance does the work, found in the store.
 */
export class JobRunner implements JobWaker {
  private readonly jobs = new Map<string, { job: Job, loop: PollLoop }>()
  private running: { job: Job, loop: PollLoop }[] = []

  constructor (private readonly log: FastifyBaseLogger, readonly enabled = true, private readonly clock: Clock = systemClock) {}

  add (job: Job): void {
    if (this.jobs.has(job.name)) throw new Error(`two jobs are named ${job.name}`)
    const step = job.lease === undefined
      ? async (signal: AbortSignal) => await job.tick(signal)
      : async (signal: AbortSignal) => await this.leasedStep(job, signal)
    this.jobs.set(job.name, { job, loop: new PollLoop(job.name, job.pollMs, this.log, step) })
  }

  wake (name: string): void {
    const entry = this.jobs.get(name)
    if (entry === undefined) throw new Error(`no job is named ${name}`)
    entry.loop.wake()
  }

  async start (): Promise<void> {
    if (this.running.length > 0) return
    this.running = [...this.jobs.values()].filter(({ job }) => this.enabled || job.runsOn === 'instance')
    for (const { job, loop } of this.running) {
      await job.start?.(() => { loop.wake() })
      loop.start()
    }
  }

  async stop (): Promise<void> {
    const running = this.running
    this.running = []
    await Promise.all(running.map(async ({ job, loop }) => {
      await loop.stop()
      await job.stop?.()
    }))
  }

  /** One claim and, if it got a unit, its run under a lease renewed meanwhile. */
  private async leasedStep (job: LeasedJob<unknown>, signal: AbortSignal): Promise<boolean> {
    const { lease } = job
    const unit = await job.claim(this.clock.now(), lease.ms)
    if (unit === null) return false
    const held = new HeldLease(lease.ms, signal, this.clock)
    const fields = { job: job.name, ...lease.fields?.(unit) }
    let renewing: Promise<void> = Promise.resolve()
    const renew = lease.renew === undefined
      ? null
      : setInterval(() => {
        renewing = renewing
          .then(async () => { if (!held.lost && !await lease.renew!(unit, held.until())) held.markLost() })
          .catch((err: unknown) => { this.log.warn({ err, ...fields }, 'a lease could not be renewed; trying again at the next renewal') })
      }, lease.ms / RENEWALS_PER_LEASE)
    try {
      await job.run(unit, held)
    } catch (err) {
      if (held.lost || err instanceof LeaseLost) {
        this.log.warn(fields, 'lease lost to another instance; this run stops')
        lease.lost?.(unit)
      } else if (signal.aborted) {
        // Shutting down: the unit goes back at once, without counting this run against it.
        await lease.handBack?.(unit).catch(() => {})
        this.log.info(fields, 'handed back: the service is stopping')
      } else if (lease.failed !== undefined) {
        // The client sees the job's reason, never the internal error (it may quote SQL): that goes to the log.
        this.log.error({ err, ...fields }, 'run failed')
        await lease.failed(unit, err)
      } else throw err
    } finally {
      if (renew !== null) clearInterval(renew)
      await renewing
    }
    return true
  }
}
