import type { Held, OperationRecord, OperationStatus } from '../../store/leased-rows.ts'

/**
 * The states a filter may name: those of the exported collection's rows (posts'; `scheduled`
 * since posts' editorial migration widened `filter_status`).
 */
export const FILTER_STATUSES = ['draft', 'published', 'archived', 'scheduled'] as const
export type FilterStatus = typeof FILTER_STATUSES[number]

export const EXPORT_FORMATS = ['ndjson', 'wxr'] as const
export type ExportFormat = typeof EXPORT_FORMATS[number]

/** What a client asks for: `POST /exports`. */
export interface ExportRequest {
  readonly format: ExportFormat
  readonly filter: { readonly status?: FilterStatus }
  readonly callbackUrl: string | null
}

/** An export job as the store keeps it. Only its owner sees it (admins create them). */
export interface ExportJob extends OperationRecord {
  readonly format: ExportFormat
  readonly filter: { readonly status?: FilterStatus }
  /** The API version (and its link prefix) of the request that made the job: the file's lines are that version's posts. */
  readonly apiVersion: number
  readonly linkBase: string
  readonly callbackUrl: string | null
  /** Posts written so far, and how many matched when the run began (null before). */
  readonly exported: number
  readonly total: number | null
  readonly error: string | null
  /** The file's length in bytes and SHA-256 (base64url), once succeeded. */
  readonly size: number | null
  readonly sha256: string | null
}

/** A worker's hold on a job: every write it makes names the token, and fails once the lease was lost. */
export type ExportLease = Held<ExportJob>

/** 0–100: done jobs are 100, others the share of matching posts written so far (never 100 before the end). */
export function progressOf (job: Pick<ExportJob, 'status' | 'exported' | 'total'>): number {
  if (job.status === 'succeeded') return 100
  if (job.total === null || job.total === 0) return 0
  return Math.min(99, Math.floor((job.exported / job.total) * 100))
}

/** The events a job's end raises. */
export const EXPORT_EVENT_TYPES = ['export.succeeded', 'export.failed'] as const

/** The event a callback URL receives when a job ends. */
export function exportEventType (status: OperationStatus): typeof EXPORT_EVENT_TYPES[number] {
  return status === 'succeeded' ? 'export.succeeded' : 'export.failed'
}
