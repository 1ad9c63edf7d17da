import type { Kysely, Selectable } from 'kysely'
import { OperationRows, operationRecord } from '../../store/leased-rows.ts'
import type { Database, DialectParts } from '../../store/tables.ts'
import type { ImportJob, ImportLease, ImportReport, ImportSource, Upload } from './import.ts'
import type { ImportsTable, ImportStep, ImportStore } from './store.ts'

function toJob (row: Selectable<ImportsTable>): ImportJob {
  return {
    ...operationRecord(row),
    source: row.source,
    dryRun: Number(row.dry_run) === 1,
    uploadId: row.upload_id,
    size: Number(row.size),
    position: Number(row.position),
    progress: Number(row.progress),
    report: JSON.parse(row.report) as ImportReport,
    seenTags: JSON.parse(row.seen_tags) as string[],
    failure: row.failure,
  }
}

/** The imports, import_uploads and import_sources tables. */
export class ImportsRepository implements ImportStore {
  private readonly rows: OperationRows<Selectable<ImportsTable>, ImportJob>

  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {
    this.rows = new OperationRows(db, dialect, 'imports', toJob)
  }

  async appendUpload (uploadId: string, seq: number, data: Uint8Array, now: Date): Promise<void> {
    await this.db.insertInto('import_uploads').values({ upload_id: uploadId, seq, data, created_at: this.dialect.timestamp(now) }).execute()
  }

  async readUpload (uploadId: string, fromSeq: number, limit: number): Promise<Array<{ seq: number, data: Uint8Array }>> {
    const rows = await this.db.selectFrom('import_uploads').select(['seq', 'data'])
      .where('upload_id', '=', uploadId).where('seq', '>=', fromSeq).orderBy('seq').limit(limit).execute()
    return rows.map(r => ({ seq: Number(r.seq), data: r.data }))
  }

  async deleteUpload (uploadId: string): Promise<void> {
    await this.db.deleteFrom('import_uploads').where('upload_id', '=', uploadId).execute()
  }

  async sweepUploads (cutoff: Date): Promise<number> {
    const r = await this.db.deleteFrom('import_uploads')
      .where('created_at', '<', this.dialect.timestamp(cutoff))
      .where(eb => eb.not(eb.exists(eb.selectFrom('imports').select('imports.id')
        .whereRef('imports.upload_id', '=', 'import_uploads.upload_id')
        .where('imports.status', 'in', ['pending', 'running']))))
      .executeTakeFirst()
    return Number(r.numDeletedRows)
  }

  async create (owner: string, upload: Upload, dryRun: boolean, report: ImportReport, now: Date): Promise<ImportJob> {
    return await this.rows.create(owner, {
      source: upload.source,
      dry_run: dryRun ? 1 : 0,
      upload_id: upload.id,
      size: upload.size,
      sha256: upload.sha256,
      report: JSON.stringify(report),
      seen_tags: '[]',
      failure: null,
    }, now)
  }

  async findById (id: number, owner: string): Promise<ImportJob | null> {
    return await this.rows.find(id, owner)
  }

  async claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ImportLease | null> {
    return await this.rows.claim(now, leaseMs, maxAttempts)
  }

  async expire (now: Date, maxAttempts: number): Promise<ImportJob[]> {
    const jobs = await this.rows.expire(now, maxAttempts, {
      failure: `The import was interrupted ${maxAttempts} times (its worker stopped or lost its lease); it was given up. What it wrote before stays, and importing the file again goes on from there.`,
    })
    for (const job of jobs) await this.deleteUpload(job.uploadId)
    return jobs
  }

  private stepValues (step: ImportStep) {
    return { position: step.position, progress: step.progress, report: JSON.stringify(step.report), seen_tags: JSON.stringify(step.seenTags) }
  }

  async step (lease: ImportLease, step: ImportStep, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.rows.step(lease, this.stepValues(step), leaseUntil, now)
  }

  async renew (lease: ImportLease, leaseUntil: Date, now: Date): Promise<boolean> {
    return await this.rows.renew(lease, leaseUntil, now)
  }

  async finish (lease: ImportLease, outcome: { status: 'succeeded' } | { status: 'failed', failure: string }, step: ImportStep, now: Date): Promise<ImportJob | null> {
    const job = await this.rows.finish(lease, outcome.status, { ...this.stepValues(step), failure: outcome.status === 'failed' ? outcome.failure : null }, now)
    if (job !== null) await this.deleteUpload(job.uploadId)
    return job
  }

  // Nothing of an import's shows a note while it waits: what its run got to stays in its report.
  async release (lease: ImportLease, countAttempt: boolean, now: Date): Promise<boolean> {
    return await this.rows.release(lease, countAttempt, now)
  }

  async identities (source: ImportSource, sourceIds: readonly string[]): Promise<Map<string, number>> {
    if (sourceIds.length === 0) return new Map()
    const rows = await this.db.selectFrom('import_sources').select(['source_id', 'row_id'])
      .where('source', '=', source).where('source_id', 'in', [...sourceIds]).execute()
    return new Map(rows.map(r => [r.source_id, Number(r.row_id)]))
  }

  async remember (source: ImportSource, rows: ReadonlyArray<{ sourceId: string, rowId: number }>, importId: number): Promise<void> {
    if (rows.length === 0) return
    await this.db.insertInto('import_sources')
      .values(rows.map(r => ({ source, source_id: r.sourceId, row_id: r.rowId, import_id: importId })))
      .onConflict(oc => oc.columns(['source', 'source_id']).doUpdateSet(eb => ({ row_id: eb.ref('excluded.row_id'), import_id: eb.ref('excluded.import_id') })))
      .execute()
  }
}
