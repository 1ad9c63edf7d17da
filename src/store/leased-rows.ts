import { randomUUID } from 'node:crypto'
import type { Generated, Kysely, Selectable } from 'kysely'
import type { ColumnTypes } from './migrations/column-types.ts'
import { type Database, type DialectParts, iso, type Timestamp } from './tables.ts'

/** Where an operation is: waiting for a runner, running under a lease, or ended. */
export const OPERATION_STATUSES = ['pending', 'running', 'succeeded', 'failed'] as const
export type OperationStatus = typeof OPERATION_STATUSES[number]

/** The columns of a table of leased operations: jobs that one instance at a time runs, under a lease. */
export interface LeasedColumns {
  id: Generated<number>
  /** Who asked for it: the only one (besides nobody) who reads it. */
  owner: string
  status: OperationStatus
  attempts: Generated<number>
  lease_token: string | null
  lease_until: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
  finished_at: Timestamp | null
}

/** What every operation's record has, whatever else it holds: the shape the runner and the routes read. */
export interface OperationRecord {
  readonly id: number
  readonly owner: string
  readonly status: OperationStatus
  /** Runs started so far (the one under way included). */
  readonly attempts: number
  readonly createdAt: string
  readonly updatedAt: string
  readonly finishedAt: string | null
}

/** The record's part of a row of LeasedColumns. */
export function operationRecord (row: Selectable<LeasedColumns>): OperationRecord {
  return {
    id: Number(row.id),
    owner: row.owner,
    status: row.status,
    attempts: Number(row.attempts),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    finishedAt: row.finished_at === null ? null : iso(row.finished_at),
  }
}

/** Ended: it runs no more, and its record stays as it is. */
export function isFinished (status: OperationStatus): boolean {
  return status === 'succeeded' || status === 'failed'
}

/** A claimed operation, as the runner that claimed it holds it: its record, and the token of its lease. */
export interface Held<J> {
  readonly job: J
  readonly token: string
}

/**
 * The columns of LeasedColumns in a CREATE TABLE (a new table of operations adds its own after
 * them). `id` first; the status check names the statuses.
 */
export function operationColumns (t: ColumnTypes): string {
  return [
    `id ${t.id}`,
    'owner TEXT NOT NULL',
    `status TEXT NOT NULL CHECK (status IN (${OPERATION_STATUSES.map(v => `'${v}'`).join(', ')}))`,
    'attempts INTEGER NOT NULL DEFAULT 0',
    'lease_token TEXT',
    `lease_until ${t.timestamp}`,
    `created_at ${t.timestamp} NOT NULL`,
    `updated_at ${t.timestamp} NOT NULL`,
    `finished_at ${t.timestamp}`,
  ].join(',\n')
}

/** The index a claim reads (the oldest pending, or running with a lapsed lease), and the one the owner's reads take. */
export function operationIndexes (table: string): string[] {
  return [
    `CREATE INDEX ${table}_queue_idx ON ${table} (status, lease_until, id)`,
    `CREATE INDEX ${table}_owner_idx ON ${table} (owner, id)`,
  ]
}

/**
 * What the runner of an operation (src/jobs/operation.ts) asks of its table. Every write of a held
 * run checks the lease's token, so a runner that lost its lease changes nothing (false).
 */
export interface OperationQueue<J extends OperationRecord> {
  /**
   * Takes the oldest operation that is pending, or running under a lease that lapsed (its runner
   * died), with fewer than `maxAttempts` runs: it becomes `running` under a new lease until
   * `now + leaseMs`. Run it in a unit of work; of several claimants one wins.
   */
  claim (now: Date, leaseMs: number, maxAttempts: number): Promise<Held<J> | null>
  /** The running operations whose lease lapsed after their last allowed run: failed, with a reason. */
  expire (now: Date, maxAttempts: number): Promise<J[]>
  /** Extends a held run's lease alone. */
  renew (held: Held<J>, leaseUntil: Date, now: Date): Promise<boolean>
  /**
   * Gives a held run back, pending, with `note` (why, for the owner to read, where the table keeps
   * one); its attempt counts only when `countAttempt` (a shutdown gives it back without spending one).
   */
  release (held: Held<J>, countAttempt: boolean, now: Date, note?: string | null): Promise<boolean>
}

// One table, named by the caller: the columns are what this code relies on.
interface Tables { jobs: LeasedColumns & Record<string, unknown> }

/** What a table's operations leave in their other columns, as the caller's columns say it. */
type Values = Record<string, unknown>

/**
 * The queries every long operation shares, for any table with LeasedColumns: a runner claims the
 * oldest pending operation (or a running one whose lease has lapsed) with `SKIP LOCKED` where the
 * dialect has it, so two instances never run one at once; renews its lease while it runs; records
 * its steps (`step`); ends it (`finish`), or gives it back (`release`); and once its attempts are
 * spent, an operation whose lease lapsed again is failed (`expire`). Rows come back as the
 * caller's records (`toJob`).
 */
export class OperationRows<R extends Values, J> {
  private readonly db: Kysely<Tables>

  constructor (db: Kysely<Database>, private readonly dialect: DialectParts, private readonly table: string, private readonly toJob: (row: R) => J) {
    this.db = db as unknown as Kysely<Tables>
  }

  /** Records a new operation of `owner`, pending, with `values` (the caller's columns). */
  async create (owner: string, values: Values, now: Date): Promise<J> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto(this.table as 'jobs')
      .values({ ...values, owner, status: 'pending', lease_token: null, lease_until: null, created_at: ts, updated_at: ts, finished_at: null })
      .returningAll()
      .executeTakeFirstOrThrow()
    return this.toJob(row as unknown as R)
  }

  /** Operation `id`, when `owner` asked for it. */
  async find (id: number, owner: string): Promise<J | null> {
    const row = await this.db.selectFrom(this.table as 'jobs').selectAll().where('id', '=', id).where('owner', '=', owner).executeTakeFirst()
    return row === undefined ? null : this.toJob(row as unknown as R)
  }

  /** Claims the next operation to run, setting `start` (what a run starts from) beside the lease. */
  async claim (now: Date, leaseMs: number, maxAttempts: number, start: Values = {}): Promise<Held<J> | null> {
    const ts = this.dialect.timestamp(now)
    const token = randomUUID()
    const row = await this.db.updateTable(this.table as 'jobs')
      .set(eb => ({
        ...start,
        status: 'running' as const,
        lease_token: token,
        lease_until: this.dialect.timestamp(new Date(now.getTime() + leaseMs)),
        attempts: eb('attempts', '+', 1),
        updated_at: ts,
      }))
      .where('id', '=', eb => {
        let next = eb.selectFrom(this.table as 'jobs').select('id')
          .where(w => w.or([
            w('status', '=', 'pending'),
            w.and([w('status', '=', 'running'), w('lease_until', '<', ts)]),
          ]))
          .where('attempts', '<', maxAttempts)
          .orderBy('id')
          .limit(1)
        if (this.dialect.skipLocked) next = next.forUpdate().skipLocked()
        return next
      })
      .returningAll()
      .executeTakeFirst()
    return row === undefined ? null : { job: this.toJob(row as unknown as R), token }
  }

  /** Fails the running operations whose lease lapsed with no attempt left, with `failure` (the caller's columns). */
  async expire (now: Date, maxAttempts: number, failure: Values): Promise<J[]> {
    const ts = this.dialect.timestamp(now)
    const rows = await this.db.updateTable(this.table as 'jobs')
      .set({ ...failure, status: 'failed', lease_token: null, lease_until: null, updated_at: ts, finished_at: ts })
      .where('status', '=', 'running').where('lease_until', '<', ts).where('attempts', '>=', maxAttempts)
      .returningAll()
      .execute()
    return rows.map(row => this.toJob(row as unknown as R))
  }

  private held (held: Held<OperationRecord>) {
    return this.db.updateTable(this.table as 'jobs').where('id', '=', held.job.id).where('lease_token', '=', held.token).where('status', '=', 'running')
  }

  /** Records a step of a held run (`values`) and extends its lease; false when the lease is lost. */
  async step (held: Held<OperationRecord>, values: Values, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(held)
      .set({ ...values, lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) })
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  /** Extends a held run's lease; false when the lease is lost. */
  async renew (held: Held<OperationRecord>, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.step(held, {}, leaseUntil, now)
  }

  /** Ends a held run as `status`, with `values`; null when the lease is lost (nothing is written). */
  async finish (held: Held<OperationRecord>, status: 'succeeded' | 'failed', values: Values, now: Date): Promise<J | null> {
    const ts = this.dialect.timestamp(now)
    const row = await this.held(held)
      .set({ ...values, status, lease_token: null, lease_until: null, updated_at: ts, finished_at: ts })
      .returningAll()
      .executeTakeFirst()
    return row === undefined ? null : this.toJob(row as unknown as R)
  }

  /**
   * Gives a held run back, pending, with `values`; its attempt counts only when `countAttempt`
   * (a shutdown gives it back without spending one). False when the lease is lost.
   */
  async release (held: Held<OperationRecord>, countAttempt: boolean, now: Date, values: Values = {}): Promise<boolean> {
    const r = await this.held(held)
      .set(eb => ({
        ...values,
        status: 'pending' as const,
        lease_token: null,
        lease_until: null,
        attempts: countAttempt ? eb.ref('attempts') : eb('attempts', '-', 1),
        updated_at: this.dialect.timestamp(now),
      }))
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }
}
