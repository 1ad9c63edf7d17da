import { randomUUID } from 'node:crypto'
import { type Kysely, type Selectable, sql } from 'kysely'
import { type Database, type DialectParts, iso } from '../../store/tables.ts'
import type { ExportJob, ExportLease, ExportRequest } from './export.ts'
import type { ExportOutcome, ExportsTable, ExportStore, FileChunk } from './store.ts'

function toJob (row: Selectable<ExportsTable>): ExportJob {
  return {
    id: Number(row.id),
    owner: row.owner,
    format: row.format,
    filter: row.filter_status === null ? {} : { status: row.filter_status },
    apiVersion: Number(row.api_version),
    linkBase: row.link_base,
    callbackUrl: row.callback_url,
    status: row.status,
    exported: Number(row.exported),
    total: row.total === null ? null : Number(row.total),
    attempts: Number(row.attempts),
    error: row.error,
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    finishedAt: row.finished_at === null ? null : iso(row.finished_at),
  }
}

/** The exports and export_chunks tables. */
export class ExportsRepository implements ExportStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async create (owner: string, request: ExportRequest, version: { apiVersion: number, linkBase: string }, now: Date): Promise<ExportJob> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto('exports')
      .values({
        owner,
        format: request.format,
        filter_status: request.filter.status ?? null,
        api_version: version.apiVersion,
        link_base: version.linkBase,
        callback_url: request.callbackUrl,
        status: 'pending',
        total: null,
        lease_token: null,
        lease_until: null,
        error: null,
        size: null,
        sha256: null,
        created_at: ts,
        updated_at: ts,
        finished_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toJob(row)
  }

  async findById (id: number, owner: string): Promise<ExportJob | null> {
    const row = await this.db.selectFrom('exports').selectAll().where('id', '=', id).where('owner', '=', owner).executeTakeFirst()
    return row ? toJob(row) : null
  }

  async claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ExportLease | null> {
    const ts = this.dialect.timestamp(now)
    const token = randomUUID()
    const row = await this.db.updateTable('exports')
      .set(eb => ({
        status: 'running',
        lease_token: token,
        lease_until: this.dialect.timestamp(new Date(now.getTime() + leaseMs)),
        attempts: eb('attempts', '+', 1),
        exported: 0,
        total: null,
        updated_at: ts,
      }))
      .where('id', '=', eb => {
        let next = eb.selectFrom('exports').select('id')
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
    if (!row) return null
    // A run starts from the first post: whatever a dead run wrote goes.
    await this.db.deleteFrom('export_chunks').where('export_id', '=', row.id).execute()
    return { job: toJob(row), token }
  }

  async expire (now: Date, maxAttempts: number): Promise<ExportJob[]> {
    const ts = this.dialect.timestamp(now)
    const rows = await this.db.updateTable('exports')
      .set({
        status: 'failed',
        error: `The export was interrupted ${maxAttempts} times (its worker stopped or lost its lease); it was given up.`,
        lease_token: null,
        lease_until: null,
        updated_at: ts,
        finished_at: ts,
      })
      .where('status', '=', 'running').where('lease_until', '<', ts).where('attempts', '>=', maxAttempts)
      .returningAll()
      .execute()
    for (const row of rows) await this.db.deleteFrom('export_chunks').where('export_id', '=', row.id).execute()
    return rows.map(toJob)
  }

  private held (lease: ExportLease) {
    return this.db.updateTable('exports').where('id', '=', lease.job.id).where('lease_token', '=', lease.token).where('status', '=', 'running')
  }

  async begin (lease: ExportLease, total: number, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(lease)
      .set({ total, exported: 0, lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) })
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async append (lease: ExportLease, chunk: { seq: number, start: number, data: Uint8Array } | null, exported: number, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(lease)
      .set({ exported, lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) })
      .executeTakeFirst()
    if (Number(r.numUpdatedRows) !== 1) return false
    if (chunk !== null) {
      await this.db.insertInto('export_chunks')
        .values({ export_id: lease.job.id, seq: chunk.seq, start: chunk.start, size: chunk.data.byteLength, data: chunk.data })
        .execute()
    }
    return true
  }

  async renew (lease: ExportLease, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(lease).set({ lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) }).executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async finish (lease: ExportLease, outcome: ExportOutcome, now: Date): Promise<ExportJob | null> {
    const ts = this.dialect.timestamp(now)
    const row = await this.held(lease)
      .set(outcome.status === 'succeeded'
        ? { status: 'succeeded', size: outcome.size, sha256: outcome.sha256, error: null }
        : { status: 'failed', error: outcome.error })
      .set({ lease_token: null, lease_until: null, updated_at: ts, finished_at: ts })
      .returningAll()
      .executeTakeFirst()
    if (row && outcome.status === 'failed') await this.db.deleteFrom('export_chunks').where('export_id', '=', row.id).execute()
    return row ? toJob(row) : null
  }

  async release (lease: ExportLease, error: string | null, countAttempt: boolean, now: Date): Promise<boolean> {
    const r = await this.held(lease)
      .set(eb => ({
        status: 'pending',
        lease_token: null,
        lease_until: null,
        error,
        attempts: countAttempt ? eb.ref('attempts') : eb('attempts', '-', 1),
        updated_at: this.dialect.timestamp(now),
      }))
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async readChunks (id: number, from: number, to: number, limit: number): Promise<FileChunk[]> {
    // Chunks are contiguous and ordered by start: those overlapping [from, to] are the ones starting
    // at or before `to` and ending after `from`.
    const rows = await this.db.selectFrom('export_chunks').select(['start', 'data'])
      .where('export_id', '=', id)
      .where('start', '<=', to)
      .where(sql<boolean>`start + size > ${from}`)
      .orderBy('start')
      .limit(limit)
      .execute()
    return rows.map(r => ({ start: Number(r.start), data: r.data }))
  }

  async deleteFinishedBefore (cutoff: Date): Promise<number> {
    const r = await this.db.deleteFrom('exports')
      .where('finished_at', '<', this.dialect.timestamp(cutoff))
      .where('status', 'in', ['succeeded', 'failed'])
      .executeTakeFirst()
    return Number(r.numDeletedRows)
  }
}
