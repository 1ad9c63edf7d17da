import { createHash, randomUUID } from 'node:crypto'
import type { Readable } from 'node:stream'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Clock } from '../../clock.ts'
import type { Principal } from '../../domain/principal.ts'
import { AppError } from '../../errors.ts'
import { operationRoutes } from '../../http/toolkit/operation-routes.ts'
import { runCounter } from '../../jobs/operation.ts'
import type { Interop, PartContext, Resource, RouteContext } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import type { Store } from '../../store/store.ts'
import { emptyReport, IMPORT_SOURCES, type ImportJob, type ImportSource, type Upload } from './import.ts'
import { IMPORTS_JOB, ImportWorker } from './import-worker.ts'
import { importsProblems } from './problems.ts'
import { importEtag, renderImport } from './representation.ts'
import { type CreateImportQuery, CreateImportQuerySchema, IMPORT_SCHEMAS, IMPORT_VERSIONS, ImportFileSchema, type ImportIdParams, ImportIdParamsSchema } from './schemas.ts'
import { importSettings } from './settings.ts'
import { importsStore } from './store-module.ts'

const ADMIN = { requiredScope: 'admin' }
const XML_TYPES = ['application/xml', 'text/xml', 'application/rss+xml']
const JSON_TYPE = 'application/json'
export const IMPORT_TYPES = [...XML_TYPES, JSON_TYPE]
/** The file is stored in stretches of this size as it arrives. */
const STRETCH_BYTES = 256 * 1024

/** The upload a request's body became, found by the handler (the parser's answer is only the digest). */
const uploads = new WeakMap<FastifyRequest, Upload>()

function tooLarge (max: number): AppError {
  return new AppError('IMPORT_TOO_LARGE', `The file is larger than ${max} bytes, the most an import takes (IMPORT_MAX_BYTES).`)
}

/**
 * The body straight to storage, stretch by stretch, never whole in memory: refused with 413 once it
 * passes `max` bytes (at once when Content-Length says so), with 415 or 422 as soon as its first
 * bytes show it is no export this service reads. A refused body's stored stretches are deleted.
 */
async function storeBody (store: Store, clock: Clock, interop: Interop, req: FastifyRequest, payload: Readable, max: number): Promise<string> {
  const length = Number(req.headers['content-length'])
  if (Number.isFinite(length) && length > max) throw tooLarge(max)
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  const declared = type === JSON_TYPE ? 'json' : 'xml'
  const id = randomUUID()
  const hash = createHash('sha256')
  let size = 0
  let seq = 0
  let head: Buffer = Buffer.alloc(0)
  let source: Upload['source'] | undefined
  let pending: Buffer[] = []
  let pendingBytes = 0
  const judge = (final: boolean) => {
    const s = interop.sniff(head, declared, final)
    if (s === null) return
    if ('refuse' in s) throw new AppError(s.refuse === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'IMPORT_UNREADABLE', s.reason)
    if (!(IMPORT_SOURCES as readonly string[]).includes(s.source)) throw new Error(`the imported collection reads ${s.source} files, which an import does not record`)
    source = s.source as ImportSource
  }
  const flush = async () => {
    if (pendingBytes === 0) return
    const data = Buffer.concat(pending, pendingBytes)
    pending = []
    pendingBytes = 0
    await store.imports.appendUpload(id, seq++, data, clock.now())
  }
  try {
    // A refusal stops reading without destroying the request: its answer must still reach the client.
    for await (const chunk of payload.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > max) throw tooLarge(max)
      hash.update(chunk)
      if (source === undefined) {
        head = Buffer.concat([head, chunk.subarray(0, interop.sniffBytes)])
        judge(false)
      }
      pending.push(chunk)
      pendingBytes += chunk.length
      if (pendingBytes >= STRETCH_BYTES) await flush()
    }
    if (source === undefined) judge(true)
    await flush()
  } catch (err) {
    await store.imports.deleteUpload(id).catch(() => {})
    throw err
  }
  const sha256 = hash.digest('hex')
  uploads.set(req, { id, size, sha256, source: source! })
  return sha256
}

/**
 * The collection an import fills: the one that reads other services' files (its `interop`: it
 * judges a file's first bytes, reads it, maps its entries and writes them by its own rules), for
 * every kind of file an import records.
 */
function interopOf (resources: readonly Resource[]): Interop {
  const interop = resources.find(r => r.interop !== undefined)?.interop
  if (interop === undefined) throw new Error('imports need a resource in the registry that reads files of other services (interop)')
  const missing = IMPORT_SOURCES.filter(s => interop.readers[s] === undefined)
  if (missing.length > 0) throw new Error(`imports need a resource that reads ${missing.join(' and ')} files (interop.readers)`)
  return interop
}

/** POST /imports and GET /imports/{id}: a 202 job, polled for its progress and report. */
async function importRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, store } = ctx
  const max = ctx.config.imports.maxBytes
  const interop = interopOf(ctx.resources)
  const JobRef = Type.Ref(IMPORT_VERSIONS[version])
  const tags = ['imports']
  const ops = operationRoutes<ImportJob>({
    kind: 'imports',
    job: IMPORTS_JOB,
    store,
    jobs: ctx.jobs,
    find: async (id, owner) => await store.imports.findById(id, owner),
    notFound: id => new AppError('IMPORT_NOT_FOUND', `No import ${id} exists, or it is not yours.`),
    render: (job, base) => renderImport(job, version, base),
    etag: (job, base, digest) => importEtag(job, version, base, digest),
  })

  // The file is the body: its own parsers, in a scope of its own, so no other route takes these types.
  await app.register(async scope => {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser(IMPORT_TYPES, async (req: FastifyRequest, payload: Readable) => await storeBody(store, ctx.clock, interop, req, payload, max))

    scope.post<{ Querystring: CreateImportQuery, Body: string }>('/imports', {
      bodyLimit: max,
      ...ctx.route({
        config: { ...ADMIN, bodyTypes: IMPORT_TYPES },
        schema: {
          tags,
          summary: 'Import a WordPress or Ghost export',
          description: 'Needs the `admin` scope. The body is the export file itself (WordPress: Tools → Export, a WXR file; Ghost: Settings → Export, a JSON file), at most IMPORT_MAX_BYTES (100 MiB: more is 413). Answers 202 at once with the job and `Location`; the import runs in the background: poll the job for its progress and report. A file whose first bytes show it is neither kind is 415 (422 for an XML file with a DOCTYPE). `?dry_run=true` reports what the import would do and writes nothing. Posts are matched by their source identity: importing the same file again creates nothing.',
          consumes: IMPORT_TYPES,
          querystring: CreateImportQuerySchema,
          body: ImportFileSchema,
          response: { 202: JobRef, ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) },
        },
      }),
    }, async (req, reply) => {
      const upload = uploads.get(req)
      if (upload === undefined) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `This endpoint takes the export file as ${IMPORT_TYPES.join(' or ')}.`)
      const principal = req.principal as Principal
      return await ops.accept(req, reply, async uow => await uow.imports.create(principal.subject, upload, req.query.dry_run === true, emptyReport(), ctx.clock.now()))
    })

    scope.get<{ Params: ImportIdParams }>('/imports/:import_id', ctx.route({
      config: ADMIN,
      schema: {
        tags,
        summary: 'Read an import job',
        description: 'Poll until `status` is `succeeded` or `failed` (`failure` says why). `report` counts the posts created, updated, unchanged and skipped, the tags, the redirects made of old slugs, and lists a warning per item that was mended or left out. While unfinished the answer carries `Retry-After`. Only the admin who started an import sees it.',
        params: ImportIdParamsSchema,
        response: { 200: JobRef, 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 422) },
      },
    }), async (req, reply) => await ops.poll(req, reply, req.params.import_id))
  })
}

/** This instance's import worker: it takes jobs from the store's queue (docs/import.md). */
function importJobs ({ config, store, log, metrics, resources, services, clock }: PartContext): ImportWorker[] {
  const target = interopOf(resources)
  const images = resources.find(r => r.images !== undefined)?.images
  const intake = resources.find(r => r.imageIntake !== undefined)?.imageIntake
  const bylines = resources.find(r => r.bylines !== undefined)?.bylines
  if (config.imports.fetchImages && intake === undefined) throw new Error('IMPORT_FETCH_IMAGES needs a resource that takes images in (media) in the registry')
  const runs = runCounter(metrics, 'import')
  const { leaseMs, maxAttempts, pollMs } = config.imports
  // On SQLite a batch's transaction holds the event loop: small ones keep reads served beside an import.
  const batchSize = config.imports.batchSize ?? (store.kind === 'sqlite' ? 2 : 10)
  return [new ImportWorker({ store, services, log: log.child({ component: 'imports' }), config, target, ...(images === undefined ? {} : { images }), ...(intake === undefined ? {} : { intake }), ...(bylines === undefined ? {} : { bylines }), leaseMs, maxAttempts, pollMs, batchSize, runs, clock })]
}

export const importsResource: Resource = {
  name: 'imports',
  description: 'Imports of WordPress (WXR) and Ghost exports: 202 jobs run in the background, polled for their progress and report (admin only)',
  path: '/imports',
  problems: importsProblems,
  indexed: false,
  schemas: IMPORT_SCHEMAS,
  routes: importRoutes,
  jobs: importJobs,
  settings: importSettings,
  store: importsStore,
}
