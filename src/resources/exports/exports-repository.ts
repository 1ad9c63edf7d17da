import { type Kysely, type Selectable, sql } from 'kysely'
import { LeasedRows } from '../../store/leased-rows.ts'
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
  private readonly leased: LeasedRows<Selectable<ExportsTable>>

  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {
    this.leased = new LeasedRows(db, dialect, 'exports')
  }

  async create (owner: string, request: ExportRequest, version: { apiVersion: number, linkBase: string }, now: Date): Promise<ExportJob> {
    return toJob(await this.leased.create(owner, {
      format: request.format,
      filter_status: request.filter.status ?? null,
      api_version: version.apiVersion,
      link_base: version.linkBase,
      callback_url: request.callbackUrl,
      total: null,
      error: null,
      size: null,
      sha256: null,
    }, now))
  }

  async findById (id: number, owner: string): Promise<ExportJob | null> {
    const row = await this.leased.find(id, owner)
    return row ? toJob(row) : null
  }

  async claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ExportLease | null> {
    const held = await this.leased.claim(now, leaseMs, maxAttempts, { exported: 0, total: null })
    if (held === null) return null
    // A run starts from the first post: whatever a dead run wrote goes.
    await this.db.deleteFrom('export_chunks').where('export_id', '=', held.row.id).execute()
    return { job: toJob(held.row), token: held.token }
  }

  async expire (now: Date, maxAttempts: number): Promise<ExportJob[]> {
    const rows = await this.leased.expire(now, maxAttempts, { error: `The export was interrupted ${maxAttempts} times (its worker stopped or lost its lease); it was given up.` })
    for (const row of rows) await this.db.deleteFrom('export_chunks').where('export_id', '=', row.id).execute()
    return rows.map(toJob)
  }

  async begin (lease: ExportLease, total: number, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.leased.step(lease.job.id, lease.token, { total, exported: 0 }, leaseUntil, now)
  }

  async append (lease: ExportLease, chunk: { seq: number, start: number, data: Uint8Array } | null, exported: number, leaseUntil: Date, now: Date): Promise<boolean> {
    if (!await this.leased.step(lease.job.id, lease.token, { exported }, leaseUntil, now)) return false
    if (chunk !== null) {
      await this.db.insertInto('export_chunks')
        .values({ export_id: lease.job.id, seq: chunk.seq, start: chunk.start, size: chunk.data.byteLength, data: chunk.data })
        .execute()
    }
    return true
  }

  async renew (lease: ExportLease, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.leased.renew(lease.job.id, lease.token, leaseUntil, now)
  }

  async finish (lease: ExportLease, outcome: ExportOutcome, now: Date): Promise<ExportJob | null> {
    const row = await this.leased.finish(lease.job.id, lease.token, outcome.status, outcome.status === 'succeeded'
      ? { size: outcome.size, sha256: outcome.sha256, error: null }
      : { error: outcome.error }, now)
    if (row && outcome.status === 'failed') await this.db.deleteFrom('export_chunks').where('export_id', '=', row.id).execute()
    return row ? toJob(row) : null
  }

  async release (lease: ExportLease, error: string | null, countAttempt: boolean, now: Date): Promise<boolean> {
    return await this.leased.release(lease.job.id, lease.token, countAttempt, now, { error })
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
