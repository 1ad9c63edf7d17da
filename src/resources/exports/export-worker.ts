import { createHash, randomUUID } from 'node:crypto'
import type { Principal } from '../../domain/principal.ts'
import type { Exportable, FormatWriter } from '../../http/contract/resources.ts'
import type { ApiVersion } from '../../http/protocol/versioning.ts'
import type { HeldLease } from '../../jobs/lease.ts'
import { type Operation, OperationJob, type OperationRunning } from '../../jobs/operation.ts'
import type { EventInput, UnitOfWork } from '../../store/store.ts'
import { exportEventType, type ExportJob, type ExportLease } from './export.ts'

export interface ExportWorkerOptions extends OperationRunning {
  readonly retentionDays: number
  /** The collection the file holds: its rows, each a line as the job's API version represents it (NDJSON). */
  readonly source: Exportable
  /** The other formats its rows are written in, by name (`wxr`): the collection's own (its `interop.writers`). */
  readonly formats?: Readonly<Record<string, FormatWriter>>
  /** The `data` of the webhook: the job as GET /exports/{id} shows it. */
  readonly renderJob: (job: ExportJob) => unknown
  /** The event of a job that ended: its version-1 representation. */
  readonly jobEvent: (job: ExportJob) => EventInput
  /** Called after a commit that queued a webhook, so it goes out now rather than at the next poll. */
  readonly webhookQueued: () => void
  /** PUBLIC_BASE_URL: the blog's address, which a WXR file names its posts by. */
  readonly site?: string
}

/** Posts read per query: a page is one keyset step, so each costs the same at any depth. */
export const PAGE_SIZE = 250
/** A stretch of the file is stored once this many bytes are waiting. */
export const CHUNK_BYTES = 256 * 1024
const SWEEP_INTERVAL_MS = 60 * 60_000

/** The worker's job name: wake it after committing a new export. */
export const EXPORTS_JOB = 'exports'

/**
 * Export jobs as an operation of the core (src/jobs/operation.ts), one at a time per instance. A
 * run reads the posts in id order, page by page (keyset), and stores the file (NDJSON, or WXR) in
 * chunks as it goes: memory holds one page and one chunk, whatever the number of posts. Each page's
 * chunk and progress commit together with a renewed lease (and the runner renews it between pages);
 * a run taken up again after its runner died starts afresh (its claim deletes what it wrote).
 */
export class ExportWorker extends OperationJob<ExportJob> {
  constructor (opts: ExportWorkerOptions) {
    super(exportOperation(opts))
  }
}

function exportOperation (opts: ExportWorkerOptions): Operation<ExportJob> {
  const { store, clock, log, leaseMs, maxAttempts, pollMs, runs } = opts
  const now = () => clock.now()

  /** Records the event of a job that just ended, and queues its callback, in the unit of work that ended it. */
  const announce = async (uow: UnitOfWork, job: ExportJob): Promise<void> => {
    uow.events.record(opts.jobEvent(job))
    if (job.callbackUrl === null) return
    const payload = JSON.stringify({ type: exportEventType(job.status), data: opts.renderJob(job) })
    await uow.webhooks.enqueue({ id: `msg_${randomUUID()}`, exportId: job.id, url: job.callbackUrl, payload }, now())
    uow.onCommit(opts.webhookQueued)
  }

  return {
    name: EXPORTS_JOB,
    noun: 'export',
    store,
    clock,
    log,
    leaseMs,
    maxAttempts,
    pollMs,
    runs,
    queue: r => r.exports,
    sweep: {
      everyMs: SWEEP_INTERVAL_MS,
      async run (at) {
        const n = await store.exports.deleteFinishedBefore(new Date(at.getTime() - opts.retentionDays * 86_400_000))
        if (n > 0) log.info({ deleted: n }, 'deleted exports past their retention')
      },
    },
    run: async (lease, held) => { await write(opts, announce, lease, held) },
    async fail (lease, error) {
      await store.transaction(async uow => {
        const job = await uow.exports.finish(lease, { status: 'failed', error }, now())
        if (job) await announce(uow, job)
      })
    },
    retryNote: job => `Run ${job.attempts} failed on the service's side; the export will be tried again.`,
    givenUp: job => `The export failed on the service's side ${job.attempts} times and was given up; the logs have the details (export_id ${job.id}).`,
    expired: announce,
  }
}

/** One run: the file, page by page, then its end with the job's, in one unit of work. */
async function write (opts: ExportWorkerOptions, announce: (uow: UnitOfWork, job: ExportJob) => Promise<void>, lease: ExportLease, held: HeldLease): Promise<void> {
  const { store, source } = opts
  const now = () => opts.clock.now()
  const job = lease.job
  // Exports are made by admins only, and an admin sees every post.
  const viewer: Principal = { subject: job.owner, scopes: new Set(['admin']), kind: 'jwt' }
  const filter = job.filter.status === undefined ? {} : { status: job.filter.status }
  const sort = [{ key: 'id' as const, direction: 'asc' as const }]

  const counted = await source.list(store, { filter, sort, limit: 1, count: true }, viewer)
  if (!await store.exports.begin(lease, counted.total ?? 0, held.until(), now())) held.lose()

  const site = opts.site ?? ''
  const writer = job.format === 'ndjson' ? null : opts.formats?.[job.format]
  if (writer === undefined) throw new Error(`the exported collection writes no ${job.format} files`)
  const line = (row: { id: number }) => writer !== null
    ? writer.row(row, site)
    : JSON.stringify(source.render(row, job.apiVersion as ApiVersion, job.linkBase)) + '\n'

  const hash = createHash('sha256')
  let pending: Buffer[] = writer !== null ? [Buffer.from(writer.head(site, now()))] : []
  let pendingBytes = pending[0]?.length ?? 0
  let written = 0
  let seq = 0
  let exported = 0
  let after: number | undefined
  const cut = () => {
    const data = Buffer.concat(pending, pendingBytes)
    const chunk = { seq: seq++, start: written, data }
    hash.update(data)
    written += data.length
    pending = []
    pendingBytes = 0
    return chunk
  }

  for (;;) {
    held.signal.throwIfAborted()
    const page = await source.list(store, { filter, sort, limit: PAGE_SIZE, ...(after === undefined ? {} : { after: [after] }) }, viewer)
    const chunks: { seq: number, start: number, data: Buffer }[] = []
    for (const row of page.items) {
      const bytes = Buffer.from(line(row))
      pending.push(bytes)
      pendingBytes += bytes.length
      if (pendingBytes >= CHUNK_BYTES) chunks.push(cut())
    }
    exported += page.items.length
    after = page.items.at(-1)?.id ?? after
    if (!page.more) {
      if (writer !== null) {
        const tail = Buffer.from(writer.tail())
        pending.push(tail)
        pendingBytes += tail.length
      }
      if (pendingBytes > 0) chunks.push(cut())
      await store.transaction(async uow => {
        for (const c of chunks) if (!await uow.exports.append(lease, c, exported, held.until(), now())) held.lose()
        const done = await uow.exports.finish(lease, { status: 'succeeded', size: written, sha256: hash.digest('base64url') }, now())
        if (done === null) held.lose()
        await announce(uow, done)
      })
      opts.log.info({ export_id: job.id, posts: exported, bytes: written }, 'export succeeded')
      return
    }
    await store.transaction(async uow => {
      if (chunks.length === 0 && !await uow.exports.append(lease, null, exported, held.until(), now())) held.lose()
      for (const c of chunks) if (!await uow.exports.append(lease, c, exported, held.until(), now())) held.lose()
    })
  }
}
