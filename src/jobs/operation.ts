import type { FastifyBaseLogger } from 'fastify'
import { Counter, type Registry } from 'prom-client'
import type { Clock } from '../clock.ts'
import type { Held, OperationQueue, OperationRecord } from '../store/leased-rows.ts'
import type { Repositories, Store, UnitOfWork } from '../store/store.ts'
import type { Lease, LeasedJob } from './job.ts'
import type { HeldLease } from './lease.ts'

/** What every operation runs with: the app's, and its part's settings. */
export interface OperationRunning {
  readonly store: Store
  /** What leases are timed by (the composition root's, src/context.ts). */
  readonly clock: Clock
  readonly log: FastifyBaseLogger
  readonly leaseMs: number
  readonly maxAttempts: number
  readonly pollMs: number
  /** Counts finished runs by outcome (`runCounter`). */
  readonly runs: Counter<'outcome'>
}

/** `<noun>_runs_total{outcome}`: runs that succeeded, failed, were retried or interrupted (lease lost, shutdown). */
export function runCounter (metrics: Registry, noun: string): Counter<'outcome'> {
  const title = noun.charAt(0).toUpperCase() + noun.slice(1)
  return new Counter({ name: `${noun}_runs_total`, help: `${title} runs by outcome (succeeded, failed, retried, interrupted)`, labelNames: ['outcome'], registers: [metrics] })
}

/**
 * A long operation, declared: its table, its step function, and what its owner reads when it
 * fails. OperationJob runs it: claims one row at a time under a lease (one runner at a time per
 * row, across instances), renews the lease while the step runs, and records the outcome; a run
 * whose runner died is taken up again once its lease lapses, until `maxAttempts` runs, after which
 * it is failed.
 *
 * @example
 * const countdowns = new OperationJob<Countdown>({
 *   name: 'countdowns', noun: 'countdown', store, clock, log, runs, leaseMs, maxAttempts, pollMs,
 *   queue: r => r.countdowns,
 *   async run (held, lease) { … each write: if (!await store.countdowns.step(held, …, lease.until(), now)) lease.lose() },
 *   async fail (held, reason) { await store.countdowns.finish(held, { failure: reason }, clock.now()) },
 *   givenUp: job => `Countdown ${job.id} failed ${job.attempts} times and was given up.`,
 * })
 */
export interface Operation<J extends OperationRecord> extends OperationRunning {
  /** The job's name: what `jobs.wake` takes once an operation was accepted. */
  readonly name: string
  /** What the log lines call one: `countdown` gives `countdown_id` and "countdown started". */
  readonly noun: string
  /** Its table, in a unit of work or the store's. */
  queue (repositories: Repositories): OperationQueue<J>
  /** Housekeeping before a claim, at most once every `everyMs` (deleting what is past its retention). */
  readonly sweep?: { readonly everyMs: number, run (now: Date): Promise<void> }
  /** The "started" line's fields beyond the id and the attempt. */
  startFields? (job: J): Record<string, unknown>
  /**
   * One run, from claim to end: it does the work (each write under the lease: a write that finds
   * it gone calls `lease.lose()`) and ends by finishing the row. A throw is a failure on the
   * service's side, tried again, unless `refusal` says it is the request's.
   */
  run (held: Held<J>, lease: HeldLease): Promise<void>
  /** Ends a held run as failed with `reason` for its owner, in a unit of work of its own. */
  fail (held: Held<J>, reason: string): Promise<void>
  /** The owner's reason when a run's error fails it at once (what it was asked cannot be done); null to try again. */
  refusal? (err: unknown): string | null
  /** What a run that failed on the service's side leaves for its owner while it waits for the next (where its table keeps a note). */
  retryNote? (job: J): string
  /** The owner's reason when the last attempt failed on the service's side. */
  givenUp (job: J): string
  /** In the unit of work that failed it: an operation given up once its lease lapsed after its last attempt. */
  expired? (uow: UnitOfWork, job: J): Promise<void>
}

/** The runner of a declared Operation: a leased job of the core's JobRunner. */
export class OperationJob<J extends OperationRecord> implements LeasedJob<Held<J>> {
  readonly name: string
  readonly pollMs: number
  readonly lease: Lease<Held<J>>
  private lastSweep = 0

  constructor (private readonly op: Operation<J>) {
    this.name = op.name
    this.pollMs = op.pollMs
    const { runs } = op
    this.lease = {
      ms: op.leaseMs,
      renew: async (held, until) => await op.queue(op.store).renew(held, until, this.now()),
      handBack: async held => {
        runs.inc({ outcome: 'interrupted' })
        await op.queue(op.store).release(held, false, this.now())
      },
      lost: () => { runs.inc({ outcome: 'interrupted' }) },
      failed: async (held, err) => { await this.failed(held, err) },
      fields: held => this.fields(held.job),
    }
  }

  private now (): Date { return this.op.clock.now() }

  private fields (job: J): Record<string, unknown> {
    return { [`${this.op.noun}_id`]: job.id, attempt: job.attempts }
  }

  /** Sweeps now and then, gives up the operations interrupted too often, then claims the next one. */
  async claim (now: Date, leaseMs: number): Promise<Held<J> | null> {
    const { op } = this
    if (op.sweep !== undefined && now.getTime() - this.lastSweep >= op.sweep.everyMs) {
      this.lastSweep = now.getTime()
      await op.sweep.run(now)
    }
    return await op.store.transaction(async uow => {
      const queue = op.queue(uow)
      for (const job of await queue.expire(now, op.maxAttempts)) {
        op.log.warn({ [`${op.noun}_id`]: job.id, attempts: job.attempts }, `${op.noun} given up: interrupted too often`)
        op.runs.inc({ outcome: 'failed' })
        await op.expired?.(uow, job)
      }
      return await queue.claim(now, leaseMs, op.maxAttempts)
    })
  }

  async run (held: Held<J>, lease: HeldLease): Promise<void> {
    this.op.log.info({ ...this.fields(held.job), ...this.op.startFields?.(held.job) }, `${this.op.noun} started`)
    await this.op.run(held, lease)
    this.op.runs.inc({ outcome: 'succeeded' })
  }

  /** A run threw: refused at once, tried again, or (its last attempt) failed with a reason its owner may read. */
  private async failed (held: Held<J>, err: unknown): Promise<void> {
    const { op } = this
    const refusal = op.refusal?.(err) ?? null
    if (refusal === null && held.job.attempts < op.maxAttempts) {
      await op.queue(op.store).release(held, true, this.now(), op.retryNote?.(held.job) ?? null)
      op.runs.inc({ outcome: 'retried' })
      return
    }
    await op.fail(held, refusal ?? op.givenUp(held.job))
    op.runs.inc({ outcome: 'failed' })
    if (refusal !== null) op.log.info({ ...this.fields(held.job), reason: refusal }, `${op.noun} failed: it cannot be done`)
  }
}
