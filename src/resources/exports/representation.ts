import { digestEtag, strongEtag } from '../../http/toolkit/conditional.ts'
import { type ApiVersion, idNameOf } from '../../http/protocol/versioning.ts'
import { type ExportJob, progressOf } from './export.ts'

/** The job as GET /exports/{id} shows it, in each version (v2 names the identifier `exportId`). */
export function renderExport (job: ExportJob, version: ApiVersion, base: string) {
  const self = `${base}/exports/${job.id}`
  return {
    [idNameOf(version, 'export')]: job.id,
    status: job.status,
    progress: progressOf(job),
    format: job.format,
    filter: job.filter,
    callback_url: job.callbackUrl,
    exported: job.exported,
    total: job.total,
    size: job.size,
    error: job.error,
    created_at: job.createdAt,
    updated_at: job.updatedAt,
    finished_at: job.finishedAt,
    _links: {
      self: { href: self },
      ...(job.status === 'succeeded' ? { download: { href: `${self}/file` } } : {}),
    },
  }
}

/** Strong ETag of the job's representation: it changes with every step the worker records, and with its schemas (`digest`). */
export function exportEtag (job: ExportJob, version: ApiVersion, base: string, digest: string): string {
  return strongEtag('export', job.id, job.updatedAt, job.status, job.exported, version, base, digest)
}

/** Strong ETag of the file: its SHA-256, so equal bytes give equal tags on every instance. */
export function fileEtag (job: ExportJob): string {
  return digestEtag(job.sha256)
}
