import type { Generated } from 'kysely'
import type { LeasedColumns, OperationQueue } from '../../store/leased-rows.ts'
import type { ExportJob, ExportLease, ExportRequest, FilterStatus } from './export.ts'

/** The lease's columns (LeasedColumns: id, owner, status, attempts, lease, times) and its own. */
export interface ExportsTable extends LeasedColumns {
  format: 'ndjson' | 'wxr'
  filter_status: FilterStatus | null
  api_version: number
  link_base: string
  callback_url: string | null
  exported: Generated<number>
  total: number | null
  error: string | null
  size: number | null
  sha256: string | null
}

export interface ExportChunksTable {
  export_id: number
  seq: number
  start: number
  size: number
  data: Uint8Array
}

/** A stretch of an export's file: `data` holds its bytes from `start` on. */
export interface FileChunk {
  readonly start: number
  readonly data: Uint8Array
}

/** How a run ended: the file is complete, or the job gives up with a reason. */
export type ExportOutcome =
  | { readonly status: 'succeeded', readonly size: number, readonly sha256: string }
  | { readonly status: 'failed', readonly error: string }

/**
 * Export jobs, a durable queue with leases (OperationQueue: a claim also deletes any file a previous
 * run left; `release` keeps its note in `error`), and their files in byte ranges. The worker's
 * methods take the lease it holds and do nothing (false, null) once that lease was lost to another worker.
 */
export interface ExportStore extends OperationQueue<ExportJob> {
  create (owner: string, request: ExportRequest, version: { apiVersion: number, linkBase: string }, now: Date): Promise<ExportJob>
  /** The job if it exists and belongs to `owner`. */
  findById (id: number, owner: string): Promise<ExportJob | null>
  /** Sets how many posts the run will export, and extends the lease. */
  begin (lease: ExportLease, total: number, leaseUntil: Date, now: Date): Promise<boolean>
  /** Appends a stretch of the file (when given), records progress and extends the lease, together. */
  append (lease: ExportLease, chunk: { seq: number, start: number, data: Uint8Array } | null, exported: number, leaseUntil: Date, now: Date): Promise<boolean>
  /** Ends the run: the final state, and the lease cleared. Null when the lease was lost. */
  finish (lease: ExportLease, outcome: ExportOutcome, now: Date): Promise<ExportJob | null>
  /** Up to `limit` stretches of a file that overlap bytes `from`–`to` (inclusive), in order. */
  readChunks (id: number, from: number, to: number, limit: number): Promise<FileChunk[]>
  /** Deletes jobs (and their files) that finished before `cutoff`; returns how many. */
  deleteFinishedBefore (cutoff: Date): Promise<number>
}

declare module '../../store/tables.ts' { interface Database { exports: ExportsTable, export_chunks: ExportChunksTable } }
declare module '../../store/store.ts' { interface Repositories { readonly exports: ExportStore } }
