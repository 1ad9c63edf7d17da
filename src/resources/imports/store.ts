import type { Generated } from 'kysely'
import type { LeasedColumns, OperationQueue } from '../../store/leased-rows.ts'
import type { Timestamp } from '../../store/tables.ts'
import type { ImportJob, ImportLease, ImportReport, ImportSource, Upload } from './import.ts'

/** The lease's columns (LeasedColumns: id, owner, status, attempts, lease, times) and its own. */
export interface ImportsTable extends LeasedColumns {
  source: ImportSource
  dry_run: number
  upload_id: string
  size: number
  sha256: string
  position: Generated<number>
  progress: Generated<number>
  report: string
  seen_tags: string
  failure: string | null
}

export interface ImportUploadsTable {
  upload_id: string
  seq: number
  data: Uint8Array
  created_at: Timestamp
}

export interface ImportSourcesTable {
  source: string
  source_id: string
  /** The row the entry became in the collection that took it. */
  row_id: number
  import_id: number
}

/** What a batch commits with its rows: how far the run got, and the report so far. */
export interface ImportStep {
  readonly position: number
  readonly progress: number
  readonly report: ImportReport
  readonly seenTags: readonly string[]
}

/**
 * Import jobs, a durable queue with leases (OperationQueue: what an earlier run committed, its
 * position and report, stays across claims); their uploaded files; and the source identities of
 * what they wrote. The worker's methods take the lease it holds and do nothing (false, null) once
 * that lease was lost to another worker.
 */
export interface ImportStore extends OperationQueue<ImportJob> {
  /** Stores one stretch of an upload (its bytes from the previous stretch's end on). */
  appendUpload (uploadId: string, seq: number, data: Uint8Array, now: Date): Promise<void>
  /** Up to `limit` stretches of an upload from stretch `fromSeq` on, in order. */
  readUpload (uploadId: string, fromSeq: number, limit: number): Promise<Array<{ seq: number, data: Uint8Array }>>
  deleteUpload (uploadId: string): Promise<void>
  /** Deletes uploads older than `cutoff` that no import holds (a request that failed after its body was stored). */
  sweepUploads (cutoff: Date): Promise<number>
  create (owner: string, upload: Upload, dryRun: boolean, report: ImportReport, now: Date): Promise<ImportJob>
  /** The job if it exists and belongs to `owner`. */
  findById (id: number, owner: string): Promise<ImportJob | null>
  /** Records a step and extends the lease, together. */
  step (lease: ImportLease, step: ImportStep, leaseUntil: Date, now: Date): Promise<boolean>
  /** Ends the run. Null when the lease was lost. */
  finish (lease: ImportLease, outcome: { status: 'succeeded' } | { status: 'failed', failure: string }, step: ImportStep, now: Date): Promise<ImportJob | null>
  /** The rows that entries `sourceIds` of `source` became, by source id. */
  identities (source: ImportSource, sourceIds: readonly string[]): Promise<Map<string, number>>
  /** Records (or moves) the rows entries became, in one statement. */
  remember (source: ImportSource, rows: ReadonlyArray<{ sourceId: string, rowId: number }>, importId: number): Promise<void>
}

declare module '../../store/tables.ts' {
  interface Database { imports: ImportsTable, import_uploads: ImportUploadsTable, import_sources: ImportSourcesTable }
}
declare module '../../store/store.ts' { interface Repositories { readonly imports: ImportStore } }
