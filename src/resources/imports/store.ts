import type { Generated } from 'kysely'
import type { LeasedColumns } from '../../store/leased-rows.ts'
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
 * Import jobs, a durable queue with leases; their uploaded files; and the source identities of
 * what they wrote. The worker's methods take the lease it holds and do nothing (false, null) once
 * that lease was lost to another worker.
 */
export interface ImportStore {
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
  /**
   * Takes the oldest job that is pending, or running under a lease that has expired (its worker died),
   * with fewer than `maxAttempts` runs: it becomes `running` under a new lease until `now + leaseMs`.
   * What an earlier run committed (its position and report) stays. Run it in a unit of work.
   */
  claim (now: Date, leaseMs: number, maxAttempts: number): Promise<ImportLease | null>
  /** Jobs whose lease expired after their last allowed run: failed, with a reason. */
  expire (now: Date, maxAttempts: number): Promise<ImportJob[]>
  /** Records a step and extends the lease, together. */
  step (lease: ImportLease, step: ImportStep, leaseUntil: Date, now: Date): Promise<boolean>
  /** Extends the lease alone (a run busy between steps: fetching a post's images). False when it was lost. */
  renew (lease: ImportLease, leaseUntil: Date, now: Date): Promise<boolean>
  /** Ends the run. Null when the lease was lost. */
  finish (lease: ImportLease, outcome: { status: 'succeeded' } | { status: 'failed', failure: string }, step: ImportStep, now: Date): Promise<ImportJob | null>
  /** Gives the job back to the queue (a shutdown, or a run that failed and may be retried). */
  release (lease: ImportLease, countAttempt: boolean, now: Date): Promise<boolean>
  /** The rows that entries `sourceIds` of `source` became, by source id. */
  identities (source: ImportSource, sourceIds: readonly string[]): Promise<Map<string, number>>
  /** Records (or moves) the rows entries became, in one statement. */
  remember (source: ImportSource, rows: ReadonlyArray<{ sourceId: string, rowId: number }>, importId: number): Promise<void>
}

declare module '../../store/tables.ts' {
  interface Database { imports: ImportsTable, import_uploads: ImportUploadsTable, import_sources: ImportSourcesTable }
}
declare module '../../store/store.ts' { interface Repositories { readonly imports: ImportStore } }
