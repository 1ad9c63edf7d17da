import { randomUUID } from 'node:crypto'
import type { Kysely, Selectable } from 'kysely'
import { type Database, type DialectParts, iso } from '../../store/tables.ts'
import type { ImportJob, ImportLease, ImportReport, ImportSource, Upload } from './import.ts'
import type { ImportsTable, ImportStep, ImportStore } from './store.ts'

function toJob (row: Selectable<ImportsTable>): ImportJob {
  return {
    id: Number(row.id),
    owner: row.owner,
    source: row.source,
    dryRun: Number(row.dry_run) === 1,
    status: row.status,
    uploadId: row.upload_id,
    size: Number(row.size),
    position: Number(row.position),
    progress: Number(row.progress),
    report: JSON.parse(row.report) as ImportReport,
    seenTags: JSON.parse(row.seen_tags) as string[],
    failure: row.failure,
    attempts: Number(row.attempts),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    finishedAt: row.finished_at === null ? null : iso(row.finished_at),
  }
}

/** The imports, import_uploads and import_sources tables. */
export class ImportsRepository implements ImportStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

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
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto('imports')
      .values({
        owner,
        source: upload.source,
        dry_run: dryRun ? 1 : 0,
        status: 'pending',
        upload_id: upload.id,
        size: upload.size,
        sha256: upload.sha256,
        report: JSON.stringify(report),
        seen_tags: '[]',
        failure: null,
        lease_token: null,
        lease_until: null,
        created_at: ts,
        updated_at: ts,
        finished_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
    return toJob(row)
  }

  async findById (id: number, owner: string): Promise<ImportJob | null> {
    const row = await this.db.selectFrom('imports').selectAll().where('id', '=', id).where('owner', '=', owner).executeTakeFirst()
    return row ? toJob(row) : null
  }

  async claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ImportLease | null> {
    const ts = this.dialect.timestamp(now)
    const token = randomUUID()
    const row = await this.db.updateTable('imports')
      .set(eb => ({
        status: 'running',
        lease_token: token,
        lease_until: this.dialect.timestamp(new Date(now.getTime() + leaseMs)),
        attempts: eb('attempts', '+', 1),
        updated_at: ts,
      }))
      .where('id', '=', eb => {
        let next = eb.selectFrom('imports').select('id')
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
    return row ? { job: toJob(row), token } : null
  }

  async expire (now: Date, maxAttempts: number): Promise<ImportJob[]> {
    const ts = this.dialect.timestamp(now)
    const rows = await this.db.updateTable('imports')
      .set({
        status: 'failed',
        failure: `The import was interrupted ${maxAttempts} times (its worker stopped or lost its lease); it was given up. What it wrote before stays, and importing the file again goes on from there.`,
        lease_token: null,
        lease_until: null,
        updated_at: ts,
        finished_at: ts,
      })
      .where('status', '=', 'running').where('lease_until', '<', ts).where('attempts', '>=', maxAttempts)
      .returningAll()
      .execute()
    for (const row of rows) await this.deleteUpload(row.upload_id)
    return rows.map(toJob)
  }

  private held (lease: ImportLease) {
    return this.db.updateTable('imports').where('id', '=', lease.job.id).where('lease_token', '=', lease.token).where('status', '=', 'running')
  }

  private stepValues (step: ImportStep) {
    return { position: step.position, progress: step.progress, report: JSON.stringify(step.report), seen_tags: JSON.stringify(step.seenTags) }
  }

  async step (lease: ImportLease, step: ImportStep, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(lease)
      .set({ ...this.stepValues(step), lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) })
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async renew (lease: ImportLease, leaseUntil: Date, now: Date): Promise<boolean> {
    const r = await this.held(lease).set({ lease_until: this.dialect.timestamp(leaseUntil), updated_at: this.dialect.timestamp(now) }).executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async finish (lease: ImportLease, outcome: { status: 'succeeded' } | { status: 'failed', failure: string }, step: ImportStep, now: Date): Promise<ImportJob | null> {
    const ts = this.dialect.timestamp(now)
    const row = await this.held(lease)
      .set({
        ...this.stepValues(step),
        status: outcome.status,
        failure: outcome.status === 'failed' ? outcome.failure : null,
        lease_token: null,
        lease_until: null,
        updated_at: ts,
        finished_at: ts,
      })
      .returningAll()
      .executeTakeFirst()
    if (row) await this.deleteUpload(row.upload_id)
    return row ? toJob(row) : null
  }

  async release (lease: ImportLease, countAttempt: boolean, now: Date): Promise<boolean> {
    const r = await this.held(lease)
      .set(eb => ({
        status: 'pending',
        lease_token: null,
        lease_until: null,
        attempts: countAttempt ? eb.ref('attempts') : eb('attempts', '-', 1),
        updated_at: this.dialect.timestamp(now),
      }))
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
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
