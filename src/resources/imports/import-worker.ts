import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Config } from '../../config.ts'
import { type Bylines, type ImageCatalogue, type ImageIntake, type Interop, type Services, type SourceEntry, type SourceFile, UnreadableFile, type WrittenOutcome } from '../../http/contract/resources.ts'
import type { HeldLease } from '../../jobs/lease.ts'
import { type Operation, OperationJob, type OperationRunning } from '../../jobs/operation.ts'
import type { Store, UnitOfWork } from '../../store/store.ts'
import { type ImportJob, type ImportLease, type ImportReport, NOT_IMPORTED, type NotImported, warn } from './import.ts'
import { ImageImporter } from './image-importer.ts'
import { mappedAhead } from './mapped-ahead.ts'
import type { ImportStep } from './store.ts'
import { type ByteCounter, utf8Text } from './text.ts'

export interface ImportWorkerOptions extends OperationRunning {
  readonly config: Config
  /** The collection the posts go to: it reads the file's kinds, maps their entries and writes them (its `interop`). */
  readonly target: Interop
  /** The service's images: those a post shows render with their variants. */
  readonly images?: ImageCatalogue
  /** The people a post may name: a source's authors become users. */
  readonly bylines?: Bylines
  /** Where fetched images go (with IMPORT_FETCH_IMAGES). */
  readonly intake?: ImageIntake
  /** What the parts' services made (the intake works with them). */
  readonly services: Services
  /** Posts written per transaction. */
  readonly batchSize: number
}

/** The worker's job name: wake it after committing a new import. */
export const IMPORTS_JOB = 'imports'
/** Stretches of the upload read per query. */
const READ_STRETCHES = 1
/** Posts mapped ahead of the one being written, at least (twice a batch when that is more). */
const MAP_AHEAD = 16
/** A run records its place at least this often, posts or not (a file of 10 000 pages renews its lease too). */
const STEP_ENTRIES = 1000
const SWEEP_INTERVAL_MS = 60 * 60_000
/** An upload no import holds is deleted after this (its request failed once its body was stored). */
const ORPHAN_UPLOAD_MS = 60 * 60_000

/** Ends a dry run's batch: what it wrote is rolled back, its outcomes kept. */
class DryRunDone extends Error {
  constructor (readonly outcomes: WrittenOutcome[]) { super('dry run') }
}

/** An entry mapped, waiting for its batch: `item` is the collection's, opaque here. */
interface Pending { readonly key: string, readonly label: string, readonly item: unknown, readonly tags: readonly string[] }

/** The report's kind of a thing the file held that is not imported (a kind it does not name: `other`). */
function notImported (what: string): NotImported {
  return (NOT_IMPORTED as readonly string[]).includes(what) ? what as NotImported : 'other'
}

async function * uploadBytes (store: Store, uploadId: string): AsyncGenerator<Uint8Array> {
  let seq = 0
  for (;;) {
    const rows = await store.imports.readUpload(uploadId, seq, READ_STRETCHES)
    if (rows.length === 0) return
    for (const row of rows) {
      yield row.data
      seq = row.seq + 1
    }
  }
}

/** Each reader's entries, with the text layer's notes (bytes that were not UTF-8) in their place. */
async function * withNotes (entries: AsyncIterable<SourceEntry>, notes: SourceEntry[]): AsyncGenerator<SourceEntry> {
  for await (const entry of entries) {
    yield * notes.splice(0)
    yield entry
  }
  yield * notes.splice(0)
}

/**
 * Import jobs as an operation of the core (src/jobs/operation.ts), one at a time per instance. A
 * run reads the stored file as a stream (WXR with saxes, Ghost JSON with stream-json), maps each
 * post, and writes posts in batches: each batch, the source identities of its posts and the job's
 * place in the file and report commit in one transaction with a renewed lease. A run taken up
 * again after its runner died goes on after the last committed batch, so no post is written twice
 * (and the identities would find it if it were read again).
 */
export class ImportWorker extends OperationJob<ImportJob> {
  constructor (opts: ImportWorkerOptions) {
    super(importOperation(opts))
  }
}

function importOperation (opts: ImportWorkerOptions): Operation<ImportJob> {
  const { store, clock, log, leaseMs, maxAttempts, pollMs, runs } = opts
  const now = () => clock.now()
  const kept = ' What it wrote before stays, and importing the file again goes on from there.'
  return {
    name: IMPORTS_JOB,
    noun: 'import',
    // A post's images may take longer than a lease (each up to IMPORT_IMAGE_TIMEOUT_MS): the runner renews it meanwhile.
    store,
    clock,
    log,
    leaseMs,
    maxAttempts,
    pollMs,
    runs,
    queue: r => r.imports,
    sweep: { everyMs: SWEEP_INTERVAL_MS, run: async at => { await store.imports.sweepUploads(new Date(at.getTime() - ORPHAN_UPLOAD_MS)) } },
    startFields: job => ({ position: job.position }),
    run: async (lease, held) => { await write(opts, lease, held) },
    // Ends the job as failed, keeping the report its committed batches made.
    async fail (lease, failure) {
      const job = await store.imports.findById(lease.job.id, lease.job.owner) ?? lease.job
      await store.transaction(async uow => {
        await uow.imports.finish(lease, { status: 'failed', failure }, { position: job.position, progress: job.progress, report: job.report, seenTags: job.seenTags }, now())
      })
    },
    // A file that cannot be imported fails at once.
    refusal: err => err instanceof UnreadableFile ? err.message : null,
    givenUp: job => `The import failed on the service's side ${job.attempts} times and was given up; the logs have the details (import_id ${job.id}).${kept}`,
  }
}

function fetchOptions (config: Config) {
  return {
    allowLoopback: config.eventLog.webhookAllowLoopback,
    // Media takes no larger file.
    maxBytes: Math.min(config.imports.imageMaxBytes, config.media.maxBytes),
    timeoutMs: config.imports.imageTimeoutMs,
    maxRedirects: config.imports.imageMaxRedirects,
  }
}

/** One run, from the job's committed position to the file's end. */
async function write (opts: ImportWorkerOptions, lease: ImportLease, held: HeldLease): Promise<void> {
  const { signal } = held
  const { store, target, config, batchSize } = opts
  const now = () => opts.clock.now()
  const job = lease.job
  let report: ImportReport = structuredClone(job.report)
  let seen = new Set(job.seenTags)
  const reader = target.readers[job.source]
  if (reader === undefined) throw new UnreadableFile(`This service reads no ${job.source} files any more.`)
  const counter: ByteCounter = { bytes: 0 }
  const notes: SourceEntry[] = []
  const note = (offset: number) => {
    notes.push({ kind: 'warning', item: 'file', message: `Bytes near byte ${offset} are not UTF-8; they were read as U+FFFD (�).` })
  }
  // A reader that reads the file twice notes its first reading only: the second's notes would be the first's again.
  const file: SourceFile = {
    open: ({ noted, counted }) => utf8Text(uploadBytes(store, job.uploadId), counted ? counter : { bytes: 0 }, noted ? note : () => {}),
  }
  const { intake } = opts
  // The runner renews the lease while a post's images are fetched: a fetch stops once it was lost.
  const keepAlive = async () => { held.throwIfLost() }
  const importer = config.imports.fetchImages && !job.dryRun && intake !== undefined
    ? new ImageImporter({ store, services: opts.services, config, intake, images: target.images, owner: job.owner, clock: opts.clock, log: opts.log.child({ import_id: job.id }), fetch: fetchOptions(config), keepAlive })
    : null
  const entries = withNotes(reader.read(file, { images: importer !== null, signal }), notes)
  const readBytes = Math.max(1, job.size * reader.passes)
  const progress = () => Math.min(99, Math.floor(counter.bytes / readBytes * 100))

  let pending: Pending[] = []
  let index = 0
  let stepped = job.position

  const flush = async () => {
    const batch = pending
    pending = []
    const next = structuredClone(report)
    const nextSeen = new Set(seen)
    const apply = (outcomes: WrittenOutcome[]) => {
      outcomes.forEach((o, i) => {
        const { label, tags } = batch[i]!
        if (o.outcome === 'skipped') {
          next.posts.skipped++
          warn(next, label, o.reason)
          return
        }
        next.posts[o.outcome]++
        next.redirects += o.redirects
        for (const tag of tags) nextSeen.add(tag.toLowerCase())
      })
      next.tags = nextSeen.size
    }
    const step = (): ImportStep => ({ position: index, progress: progress(), report: next, seenTags: [...nextSeen] })
    const write = async (uow: UnitOfWork) => {
      const existing = await uow.imports.identities(job.source, batch.map(p => p.key))
      return await target.write(uow, batch.map(p => ({ existing: existing.get(p.key) ?? null, item: p.item })), job.owner, config, opts.clock, opts.images, opts.bylines)
    }
    if (job.dryRun) {
      let outcomes: WrittenOutcome[] = []
      try {
        await store.transaction(async uow => { throw new DryRunDone(await write(uow)) })
      } catch (err) {
        if (!(err instanceof DryRunDone)) throw err
        outcomes = err.outcomes
      }
      apply(outcomes)
      await store.transaction(async uow => {
        if (!await uow.imports.step(lease, step(), held.until(), now())) held.lose()
      })
    } else {
      await store.transaction(async uow => {
        const outcomes = await write(uow)
        apply(outcomes)
        // A key appears once per batch (a repeated one starts the next batch), as one row per statement needs.
        await uow.imports.remember(job.source, outcomes.flatMap((o, i) => o.outcome === 'skipped' ? [] : [{ sourceId: batch[i]!.key, rowId: o.id }]), job.id)
        if (!await uow.imports.step(lease, step(), held.until(), now())) held.lose()
      })
    }
    report = next
    seen = nextSeen
    stepped = index
  }

  const ctx = { source: job.source, now: now(), owner: job.owner }
  const mapper = target.mapper({ thread: config.imports.workerThread })
  // On the event loop a post is mapped when its turn comes: mapping ahead would hold the loop for many at once.
  const depth = config.imports.workerThread ? Math.max(MAP_AHEAD, 2 * batchSize) : 1
  let read = 0
  // What an earlier run committed is not done again (nor mapped).
  const ahead = mappedAhead(entries, depth, e => ++read > job.position && e.kind === 'item' ? mapper.map(e.source, ctx) : null)
  try {
    for await (const { entry, mapped: mapping } of ahead) {
      signal.throwIfAborted()
      index++
      if (index <= job.position) continue
      if (entry.kind === 'warning') warn(report, entry.item, entry.message)
      else if (entry.kind === 'other') {
        const what = notImported(entry.what)
        report.not_imported[what] += entry.count
        if (what !== 'comments' && what !== 'users' && what !== 'settings') report.posts.skipped += entry.count
      } else {
        // Converting a post on the event loop takes a millisecond or more: requests are served between posts.
        await nextTurn()
        let mapped = await mapping!
        if (importer !== null && !('skipped' in mapped)) {
          // Its images fetched in, the entry names them (and its cover) where they now are: mapped again.
          const fetched = await importer.apply(entry.source, entry.label, report)
          if (fetched !== entry.source) mapped = await mapper.map(fetched, ctx)
        }
        for (const w of mapped.warnings) warn(report, entry.label, w)
        if ('skipped' in mapped) {
          report.posts.skipped++
          warn(report, entry.label, mapped.skipped)
        } else {
          // The same entry twice in one batch would be created twice: the first is written before the second is looked up.
          if (pending.some(p => p.key === entry.key)) {
            index--
            await flush()
            index++
          }
          pending.push({ key: entry.key, label: entry.label, item: mapped.item, tags: mapped.tags })
        }
      }
      if (pending.length >= batchSize || index - stepped >= STEP_ENTRIES) {
        await flush()
        await nextTurn()
      }
    }
  } finally {
    await mapper.close()
  }
  if (pending.length > 0 || index > stepped) await flush()
  const done = await store.transaction(async uow => await uow.imports.finish(lease, { status: 'succeeded' }, {
    position: index, progress: 100, report, seenTags: [...seen],
  }, now()))
  if (done === null) held.lose()
  opts.log.info({ import_id: job.id, report: { ...report, warnings: report.warnings.length } }, 'import succeeded')
}
