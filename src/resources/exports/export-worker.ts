import { createHash, randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Counter } from 'prom-client'
import type { Clock } from '../../clock.ts'
import type { Principal } from '../../domain/principal.ts'
import type { Exportable } from '../../http/contract/resources.ts'
import type { ApiVersion } from '../../http/protocol/versioning.ts'
import type { Lease, LeasedJob } from '../../jobs/job.ts'
import type { HeldLease } from '../../jobs/lease.ts'
import type { EventInput, Store, UnitOfWork } from '../../store/store.ts'
import { exportEventType, type ExportJob, type ExportLease } from './export.ts'
import { wxrFormat } from './wxr.ts'

export interface ExportWorkerOptions {
  /** What leases are timed by (the composition root's, src/context.ts). */
  readonly clock: Clock
  readonly store: Store
  readonly log: FastifyBaseLogger
  readonly leaseMs: number
  readonly maxAttempts: number
  readonly pollMs: number
  readonly retentionDays: number
  /** The collection the file holds: its rows, each a line as the job's API version represents it. */
  readonly source: Exportable
  /** The `data` of the webhook: the job as GET /exports/{id} shows it. */
  readonly renderJob: (job: ExportJob) => unknown
  /** The event of a job that ended: its version-1 representation. */
  readonly jobEvent: (job: ExportJob) => EventInput
  /** Called after a commit that queued a webhook, so it goes out now rather than at the next poll. */
  readonly webhookQueued: () => void
  /** Counts finished runs by outcome: succeeded, failed, retried, interrupted. */
  readonly runs: Counter<'outcome'>
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
 * Runs export jobs from the store's queue, one at a time per instance. A run reads the posts in
 * id order, page by page (keyset), and stores the file (NDJSON, or WXR) in chunks as it goes: memory holds one
 * page and one chunk, whatever the number of posts. Each page's chunk and progress commit together
 * with a renewed lease (and the runner renews it between pages); a worker that dies leaves a lease
 * that expires, and the job is claimed again (and started afresh) by any instance, until
 * `maxAttempts` runs, after which it is failed.
 */
export class ExportWorker implements LeasedJob<ExportLease> {
  readonly name = EXPORTS_JOB
  readonly pollMs: number
  readonly lease: Lease<ExportLease>
  private lastSweep = 0

  private now (): Date { return this.opts.clock.now() }

  constructor (private readonly opts: ExportWorkerOptions) {
    this.pollMs = opts.pollMs
    const { store, runs } = opts
    this.lease = {
      ms: opts.leaseMs,
      renew: async (lease, until) => await store.exports.renew(lease, until, this.now()),
      handBack: async lease => {
        runs.inc({ outcome: 'interrupted' })
        await store.exports.release(lease, null, false, this.now())
      },
      lost: () => { runs.inc({ outcome: 'interrupted' }) },
      failed: async lease => { await this.failed(lease) },
      fields: lease => ({ export_id: lease.job.id, attempt: lease.job.attempts }),
    }
  }

  private async sweep (now: Date): Promise<void> {
    if (now.getTime() - this.lastSweep < SWEEP_INTERVAL_MS) return
    this.lastSweep = now.getTime()
    const cutoff = new Date(now.getTime() - this.opts.retentionDays * 86_400_000)
    const n = await this.opts.store.exports.deleteFinishedBefore(cutoff)
    if (n > 0) this.opts.log.info({ deleted: n }, 'deleted exports past their retention')
  }

  /** Records the event of a job that just ended, and queues its callback, in the unit of work that ended it. */
  private async announce (uow: UnitOfWork, job: ExportJob): Promise<void> {
    uow.events.record(this.opts.jobEvent(job))
    if (job.callbackUrl === null) return
    const payload = JSON.stringify({ type: exportEventType(job.status), data: this.opts.renderJob(job) })
    await uow.webhooks.enqueue({ id: `msg_${randomUUID()}`, exportId: job.id, url: job.callbackUrl, payload }, this.now())
    uow.onCommit(this.opts.webhookQueued)
  }

  /** Gives up the jobs interrupted too often, then claims the next one. */
  async claim (now: Date, leaseMs: number): Promise<ExportLease | null> {
    await this.sweep(now)
    return await this.opts.store.transaction(async uow => {
      for (const job of await uow.exports.expire(now, this.opts.maxAttempts)) {
        this.opts.log.warn({ export_id: job.id, attempts: job.attempts }, 'export given up: interrupted too often')
        this.opts.runs.inc({ outcome: 'failed' })
        await this.announce(uow, job)
      }
      return await uow.exports.claim(now, leaseMs, this.opts.maxAttempts)
    })
  }

  async run (lease: ExportLease, held: HeldLease): Promise<void> {
    this.opts.log.info({ export_id: lease.job.id, attempt: lease.job.attempts }, 'export started')
    await this.write(lease, held)
  }

  /** A run failed on our side: tried again, or (its last attempt) failed with a reason the client may read. */
  private async failed (lease: ExportLease): Promise<void> {
    const { store } = this.opts
    if (lease.job.attempts < this.opts.maxAttempts) {
      await store.exports.release(lease, `Run ${lease.job.attempts} failed on the service's side; the export will be tried again.`, true, this.now())
      this.opts.runs.inc({ outcome: 'retried' })
      return
    }
    await store.transaction(async uow => {
      const error = `The export failed on the service's side ${lease.job.attempts} times and was given up; the logs have the details (export_id ${lease.job.id}).`
      const job = await uow.exports.finish(lease, { status: 'failed', error }, this.now())
      if (job) await this.announce(uow, job)
    })
    this.opts.runs.inc({ outcome: 'failed' })
  }

  private async write (lease: ExportLease, held: HeldLease): Promise<void> {
    const { store, source } = this.opts
    const job = lease.job
    // Exports are made by admins only, and an admin sees every post.
    const viewer: Principal = { subject: job.owner, scopes: new Set(['admin']), kind: 'jwt' }
    const filter = job.filter.status === undefined ? {} : { status: job.filter.status }
    const sort = [{ key: 'id' as const, direction: 'asc' as const }]

    const counted = await source.list(store, { filter, sort, limit: 1, count: true }, viewer)
    if (!await store.exports.begin(lease, counted.total ?? 0, held.until(), this.now())) held.lose()

    const wxr = job.format === 'wxr'
    const entry = source.entry
    if (wxr && entry === undefined) throw new Error('the exported collection gives no entries for a WXR file')
    const line = (row: { id: number }) => wxr
      ? wxrFormat.item(entry!(row), this.opts.site ?? '')
      : JSON.stringify(source.render(row, job.apiVersion as ApiVersion, job.linkBase)) + '\n'

    const hash = createHash('sha256')
    let pending: Buffer[] = wxr ? [Buffer.from(wxrFormat.head(this.opts.site ?? '', this.now()))] : []
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
        if (wxr) {
          const tail = Buffer.from(wxrFormat.tail())
          pending.push(tail)
          pendingBytes += tail.length
        }
        if (pendingBytes > 0) chunks.push(cut())
        await store.transaction(async uow => {
          for (const c of chunks) if (!await uow.exports.append(lease, c, exported, held.until(), this.now())) held.lose()
          const done = await uow.exports.finish(lease, { status: 'succeeded', size: written, sha256: hash.digest('base64url') }, this.now())
          if (done === null) held.lose()
          await this.announce(uow, done)
        })
        this.opts.runs.inc({ outcome: 'succeeded' })
        this.opts.log.info({ export_id: job.id, posts: exported, bytes: written }, 'export succeeded')
        return
      }
      await store.transaction(async uow => {
        if (chunks.length === 0 && !await uow.exports.append(lease, null, exported, held.until(), this.now())) held.lose()
        for (const c of chunks) if (!await uow.exports.append(lease, c, exported, held.until(), this.now())) held.lose()
      })
    }
  }
}
