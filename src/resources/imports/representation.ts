import { strongEtag } from '../../http/toolkit/conditional.ts'
import { type ApiVersion, idNameOf } from '../../http/protocol/versioning.ts'
import type { ImportJob } from './import.ts'

/** The job as GET /imports/{id} shows it, in each version (v2 names the identifier `importId`). */
export function renderImport (job: ImportJob, version: ApiVersion, base: string) {
  const finished = job.status === 'succeeded' || job.status === 'failed'
  return {
    [idNameOf(version, 'import')]: job.id,
    status: job.status,
    source: job.source,
    dry_run: job.dryRun,
    progress: finished ? 100 : job.progress,
    report: job.report,
    failure: job.failure,
    created_at: job.createdAt,
    finished_at: job.finishedAt,
    _links: { self: { href: `${base}/imports/${job.id}` } },
  }
}

/** Strong ETag of the job's representation: it changes with every step the worker records, and with its schemas (`digest`). */
export function importEtag (job: ImportJob, version: ApiVersion, base: string, digest: string): string {
  return strongEtag('import', job.id, job.updatedAt, job.status, job.position, version, base, digest)
}
