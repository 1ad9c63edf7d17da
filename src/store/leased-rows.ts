import { randomUUID } from 'node:crypto'
import type { Generated, Kysely } from 'kysely'
import type { Database, DialectParts, Timestamp } from './tables.ts'

/** The columns of a table of leased operations: jobs that one instance at a time runs, under a lease. */
export interface LeasedColumns {
  id: Generated<number>
  /** Who asked for it: the only one (besides nobody) who reads it. */
  owner: string
  status: 'pending' | 'running' | 'succeeded' | 'failed'
  attempts: Generated<number>
  lease_token: string | null
  lease_until: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
  finished_at: Timestamp | null
}

/** A run of an operation, as the instance that claimed it holds it: the row, and the token of its lease. */
export interface HeldRow<R> {
  readonly row: R
  readonly token: string
}

// One table, named by the caller: the columns are what this code relies on.
interface Tables { jobs: LeasedColumns & Record<string, unknown> }

/** What a table's operations leave in their other columns, as the caller's columns say it. */
type Values = Record<string, unknown>

/**
 * The lease every long operation shares (an export, an import, …), for any table with
 * LeasedColumns: a worker claims the oldest pending operation (or a running one whose lease has
 * lapsed) with `SKIP LOCKED` where the dialect has it, so two instances never run one at once;
 * renews its lease while it runs; ends it (`finish`), or gives it back (`release`); and once its
 * attempts are spent, an operation whose lease lapsed again is failed (`expire`). Every write of a
 * held run checks the token, so a worker that lost its lease changes nothing.
 */
export class LeasedRows<R extends Values> {
  private readonly db: Kysely<Tables>

  constructor (db: Kysely<Database>, private readonly dialect: DialectParts, private readonly table: string) {
    this.db = db as unknown as Kysely<Tables>
  }

  /** Records a new operation of `owner`, pending, with `values` (the caller's columns). */
  async create (owner: string, values: Values, now: Date): Promise<R> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto(this.table as 'jobs')
      .values({ ...values, owner, status: 'pending', lease_token: null, lease_until: null, created_at: ts, updated_at: ts, finished_at: null })
      .returningAll()
      .executeTakeFirstOrThrow()
    return row as unknown as R
  }

  /** Operation `id`, when `owner` asked for it. */
  async find (id: number, owner: string): Promise<R | null> {
    const row = await this.db.selectFrom(this.table as 'jobs').selectAll().where('id', '=', id).where('owner', '=', owner).executeTakeFirst()
    return row === undefined ? null : row as unknown as R
  }

  /** Claims the next operation to run, setting `start` (what a run starts from) beside the lease. */
  async claim (now: Date, leaseMs: number, maxAttempts: number, start: Values = {}): Promise<HeldRow<R> | null> {
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
    return row === undefined ? null : { row: row as unknown as R, token }
  }

  /** Fails the running operations whose lease lapsed with no attempt left, with `failure` (the caller's columns). */
  async expire (now: Date, maxAttempts: number, failure: Values): Promise<R[]> {
    const ts = this.dialect.timestamp(now)
    const rows = await this.db.updateTable(this.table as 'jobs')
      .set({ ...failure, status: 'failed', lease_token: null, lease_until: null, updated_at: ts, finished_at: ts })
      .where('status', '=', 'running').where('lease_until', '<', ts).where('attempts', '>=', maxAttempts)
      .returningAll()
      .execute()
    return rows as unknown as R[]
  }

  private held (id: number, token: string) {
    return this.db.updateTable(this.table as 'jobs').where('id', '=', id).where('lease_token', '=', token).where('status', '=', 'running')
  }

  /** Records a step of a held run (`values`) and extends its lease; false when the lease is lost. */
  async step (id: number, token: string, values: Values, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(id, token)
      .set({ ...values, lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) })
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  /** Extends a held run's lease; false when the lease is lost. */
  async renew (id: number, token: string, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.step(id, token, {}, leaseUntil, now)
  }

  /** Ends a held run as `status`, with `values`; null when the lease is lost (nothing is written). */
  async finish (id: number, token: string, status: 'succeeded' | 'failed', values: Values, now: Date): Promise<R | null> {
    const ts = this.dialect.timestamp(now)
    const row = await this.held(id, token)
      .set({ ...values, status, lease_token: null, lease_until: null, updated_at: ts, finished_at: ts })
      .returningAll()
      .executeTakeFirst()
    return row === undefined ? null : row as unknown as R
  }

  /**
   * Gives a held run back, pending, with `values`; its attempt counts only when `countAttempt`
   * (a shutdown gives it back without spending one). False when the lease is lost.
   */
  async release (id: number, token: string, countAttempt: boolean, now: Date, values: Values = {}): Promise<boolean> {
    const r = await this.held(id, token)
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
