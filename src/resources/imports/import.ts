import type { Held, OperationRecord } from '../../store/leased-rows.ts'

export const IMPORT_SOURCES = ['wordpress', 'ghost'] as const
export type ImportSource = typeof IMPORT_SOURCES[number]

/** What a file held that is not a post, counted apart (none of it is imported). */
export const NOT_IMPORTED = ['pages', 'attachments', 'menu_items', 'comments', 'users', 'settings', 'other'] as const
export type NotImported = typeof NOT_IMPORTED[number]

/** The report keeps this many warnings; past them, one more says how many were left out. */
export const WARNINGS_MAX = 500

export interface ImportWarning {
  /** The item it is about (`post 12 "Hello"`), or `file`. */
  readonly item: string
  readonly message: string
}

export interface ImportReport {
  posts: { created: number, updated: number, unchanged: number, skipped: number }
  /** Distinct tags (case-insensitive) the imported posts hold. */
  tags: number
  media: { imported: number, failed: number }
  /** Old slugs that became aliases answering 301. */
  redirects: number
  warnings: ImportWarning[]
  /** Warnings beyond WARNINGS_MAX, counted only. */
  warnings_omitted: number
  not_imported: Record<NotImported, number>
}

export function emptyReport (): ImportReport {
  return {
    posts: { created: 0, updated: 0, unchanged: 0, skipped: 0 },
    tags: 0,
    media: { imported: 0, failed: 0 },
    redirects: 0,
    warnings: [],
    warnings_omitted: 0,
    not_imported: { pages: 0, attachments: 0, menu_items: 0, comments: 0, users: 0, settings: 0, other: 0 },
  }
}

export function warn (report: ImportReport, item: string, message: string): void {
  if (report.warnings.length < WARNINGS_MAX) report.warnings.push({ item, message })
  else report.warnings_omitted++
}

/** The uploaded file as the store keeps it until the import has ended. */
export interface Upload {
  readonly id: string
  readonly size: number
  /** SHA-256, hex. */
  readonly sha256: string
  readonly source: ImportSource
}

/** An import job as the store keeps it. Only its owner (an admin) sees it. */
export interface ImportJob extends OperationRecord {
  readonly source: ImportSource
  readonly dryRun: boolean
  readonly uploadId: string
  readonly size: number
  /** Entries of the file already written (and their report committed with them): where a resumed run goes on. */
  readonly position: number
  readonly progress: number
  readonly report: ImportReport
  /** The case-folded tags counted in `report.tags` so far. */
  readonly seenTags: readonly string[]
  readonly failure: string | null
}

/** A worker's hold on a job: every write it makes names the token, and fails once the lease was lost. */
export type ImportLease = Held<ImportJob>
