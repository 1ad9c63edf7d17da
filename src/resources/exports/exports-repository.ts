import { type Kysely, type Selectable, sql } from 'kysely'
import { OperationRows, operationRecord } from '../../store/leased-rows.ts'
import type { Database, DialectParts } from '../../store/tables.ts'
import type { ExportJob, ExportLease, ExportRequest } from './export.ts'
import type { ExportOutcome, ExportsTable, ExportStore, FileChunk } from './store.ts'

function toJob (row: Selectable<ExportsTable>): ExportJob {
  return {
    ...operationRecord(row),
    format: row.format,
    filter: row.filter_status === null ? {} : { status: row.filter_status },
    apiVersion: Number(row.api_version),
    linkBase: row.link_base,
    callbackUrl: row.callback_url,
    exported: Number(row.exported),
    total: row.total === null ? null : Number(row.total),
    error: row.error,
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256,
  }
}

/** The exports and export_chunks tables. */
export class ExportsRepository implements ExportStore {
  private readonly rows: OperationRows<Selectable<ExportsTable>, ExportJob>

  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {
    this.rows = new OperationRows(db, dialect, 'exports', toJob)
  }

  async create (owner: string, request: ExportRequest, version: { apiVersion: number, linkBase: string }, now: Date): Promise<ExportJob> {
    return await this.rows.create(owner, {
      format: request.format,
      filter_status: request.filter.status ?? null,
      api_version: version.apiVersion,
      link_base: version.linkBase,
      callback_url: request.callbackUrl,
      total: null,
      error: null,
      size: null,
      sha256: null,
    }, now)
  }

  async findById (id: number, owner: string): Promise<ExportJob | null> {
    return await this.rows.find(id, owner)
  }

  async claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ExportLease | null> {
    const held = await this.rows.claim(now, leaseMs, maxAttempts, { exported: 0, total: null })
    // A run starts from the first post: whatever a dead run wrote goes.
    if (held !== null) await this.deleteFile(held.job.id)
    return held
  }

  async expire (now: Date, maxAttempts: number): Promise<ExportJob[]> {
    const jobs = await this.rows.expire(now, maxAttempts, { error: `The export was interrupted ${maxAttempts} times (its worker stopped or lost its lease); it was given up.` })
    for (const job of jobs) await this.deleteFile(job.id)
    return jobs
  }

  private async deleteFile (id: number): Promise<void> {
    await this.db.deleteFrom('export_chunks').where('export_id', '=', id).execute()
  }

  async begin (lease: ExportLease, total: number, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.rows.step(lease, { total, exported: 0 }, leaseUntil, now)
  }

  async append (lease: ExportLease, chunk: { seq: number, start: number, data: Uint8Array } | null, exported: number, leaseUntil: Date, now: Date): Promise<boolean> {
    if (!await this.rows.step(lease, { exported }, leaseUntil, now)) return false
    if (chunk !== null) {
      await this.db.insertInto('export_chunks')
        .values({ export_id: lease.job.id, seq: chunk.seq, start: chunk.start, size: chunk.data.byteLength, data: chunk.data })
        .execute()
    }
    return true
  }

  async renew (lease: ExportLease, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.rows.renew(lease, leaseUntil, now)
  }

  async finish (lease: ExportLease, outcome: ExportOutcome, now: Date): Promise<ExportJob | null> {
    const job = await this.rows.finish(lease, outcome.status, outcome.status === 'succeeded'
      ? { size: outcome.size, sha256: outcome.sha256, error: null }
      : { error: outcome.error }, now)
    if (job !== null && outcome.status === 'failed') await this.deleteFile(job.id)
    return job
  }

  async release (lease: ExportLease, countAttempt: boolean, now: Date, note: string | null = null): Promise<boolean> {
    return await this.rows.release(lease, countAttempt, now, { error: note })
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
