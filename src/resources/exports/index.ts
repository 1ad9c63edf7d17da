import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { checkCallbackUrl, WEBHOOK_DELIVERIES_JOB } from '../../facilities/events/index.ts'
import type { Principal } from '../../domain/principal.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import { message } from '../../messages.ts'
import { operationRoutes, POLL_AFTER_S } from '../../http/toolkit/operation-routes.ts'
import { sendRanged } from '../../http/toolkit/ranges.ts'
import { runCounter } from '../../jobs/operation.ts'
import type { FormatWriter, PartContext, Resource, RouteContext } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import { type ApiVersion, linkBase } from '../../http/protocol/versioning.ts'
import type { Store } from '../../store/store.ts'
import { EXPORT_EVENT_TYPES, exportEventType, type ExportFormat, type ExportJob, type ExportRequest } from './export.ts'
import { EXPORTS_JOB, ExportWorker } from './export-worker.ts'
import { exportsProblems, exportsMessages } from './problems.ts'
import { exportEtag, fileEtag, renderExport } from './representation.ts'
import { type CreateExportBody, CreateExportBodySchema, EXPORT_SCHEMAS, EXPORT_VERSIONS, type ExportIdParams, ExportIdParamsSchema } from './schemas.ts'
import { exportSettings } from './settings.ts'
import { exportsStore } from './store-module.ts'

const ADMIN = { requiredScope: 'admin' }
export const NDJSON = 'application/x-ndjson'

/** The formats a job may name besides NDJSON, each the exported collection's own (its `interop.writers`). */
function formatsOf (resources: readonly Resource[]): Readonly<Record<Exclude<ExportFormat, 'ndjson'>, FormatWriter>> {
  const writers = resources.find(r => r.interop !== undefined)?.interop?.writers ?? {}
  const wxr = writers.wxr
  if (wxr === undefined) throw new Error('exports need a resource in the registry that writes wxr files (interop.writers)')
  return { wxr }
}

/** The request's ExportRequest, or 422 naming callback_url when a webhook could not or may not be sent there. */
async function exportRequest (body: CreateExportBody, ctx: RouteContext): Promise<ExportRequest> {
  const callbackUrl = body.callback_url ?? null
  if (callbackUrl !== null) {
    const check = await checkCallbackUrl(callbackUrl, ctx.config.eventLog.webhookAllowLoopback)
    if (!check.ok) throw validationFailed([fieldError('callback_url', 'INVALID_VALUE', check.reason)])
    if (ctx.config.eventLog.webhookSecret === null) {
      throw validationFailed([fieldError('callback_url', 'INVALID_VALUE', message('NO_WEBHOOK_SECRET'))])
    }
  }
  return { format: body.format, filter: body.filter?.status === undefined ? {} : { status: body.filter.status }, callbackUrl }
}

/** Export rows: a 202 job, polled or announced by webhook, and its file with byte ranges. */
async function exportRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, store } = ctx
  const v = EXPORT_VERSIONS[version]
  const tags = ['exports']
  const JobRef = Type.Ref(v.job)
  const formats = formatsOf(ctx.resources)
  const FILE_TYPES: Readonly<Record<ExportFormat, string>> = { ndjson: NDJSON, wxr: formats.wxr.contentType }
  const ops = operationRoutes<ExportJob>({
    kind: 'exports',
    job: EXPORTS_JOB,
    store,
    jobs: ctx.jobs,
    find: async (id, owner) => await store.exports.findById(id, owner),
    notFound: id => new AppError('EXPORT_NOT_FOUND', `No export ${id} exists, or it is not yours.`),
    render: (job, base) => renderExport(job, version, base),
    etag: (job, base, digest) => exportEtag(job, version, base, digest),
  })

  app.post<{ Body: CreateExportBody }>('/exports', ctx.route({
    config: ADMIN,
    schema: {
      tags,
      summary: 'Start an export',
      description: 'Needs the `admin` scope. Answers 202 at once with the job and `Location`; the export runs in the background. Poll the job, or give `callback_url` to be told by a signed webhook (see the `exportFinished` webhook). An `Idempotency-Key` makes a retry safe.',
      body: CreateExportBodySchema,
      response: { 202: JobRef, ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const input = await exportRequest(req.body, ctx)
    const principal = req.principal as Principal
    const base = linkBase(req)
    return await ops.accept(req, reply, async uow => await uow.exports.create(principal.subject, input, { apiVersion: version, linkBase: base }, ctx.clock.now()))
  })

  app.get<{ Params: ExportIdParams }>('/exports/:export_id', ctx.route({
    config: ADMIN,
    schema: {
      tags,
      summary: 'Read an export job',
      description: 'Poll until `status` is `succeeded` (then `_links.download` leads to the file) or `failed` (`error` says why). While unfinished the answer carries `Retry-After`. Only the admin who started an export sees it.',
      params: ExportIdParamsSchema,
      response: { 200: JobRef, 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 422) },
    },
  }), async (req, reply) => await ops.poll(req, reply, req.params.export_id))

  const fileHeaders = {
    'accept-ranges': { type: 'string', enum: ['bytes'], description: '`bytes`' },
    etag: { type: 'string', maxLength: 100, description: 'Strong: the file\'s SHA-256. Send it in `If-Range` when resuming.' },
    'content-length': { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  }
  const file = {
    description: 'The file, its posts in id order. NDJSON: one post per line, as the version that started the export represents a post. WXR: a WordPress eXtended RSS 1.2 file.',
    headers: fileHeaders,
    content: Object.fromEntries(Object.values(FILE_TYPES).map(type => [type, { schema: { type: 'string', maxLength: Number.MAX_SAFE_INTEGER } }])),
  }
  const part = {
    ...file,
    description: 'The requested bytes.',
    headers: { ...fileHeaders, 'content-range': { type: 'string', maxLength: 100, description: '`bytes <first>-<last>/<length>`' } },
  }
  app.get<{ Params: ExportIdParams }>('/exports/:export_id/file', {
    // A range is of the stored bytes: never content-coded.
    compress: false,
    ...ctx.route({
      config: ADMIN,
      schema: {
        tags,
        summary: 'Download an export\'s file',
        description: 'Byte ranges (RFC 9110 §14): `Range: bytes=a-b`, `a-` or `-n` → 206 with `Content-Range`; `If-Range` with the ETag (another tag: the whole file, 200); nothing satisfiable → 416 with `Content-Range: bytes */<length>`. Several ranges that do not touch → the whole file with 200 (no multipart/byteranges). HEAD gives the headers alone. 404 until the export has succeeded.',
        params: ExportIdParamsSchema,
        produces: Object.values(FILE_TYPES),
        response: {
          200: file,
          206: part,
          304: NotModifiedSchema,
          ...problemResponses(...COMMON_ERRORS, 403, 404, 416, 422),
        },
      },
    }),
  }, async (req, reply) => {
    const job = await ops.findOwn(req, req.params.export_id)
    if (job.status !== 'succeeded' || job.size === null) {
      throw new AppError('EXPORT_NOT_FOUND', `Export ${job.id} has no file: it is ${job.status}.`, job.status === 'failed' ? {} : { headers: { 'retry-after': POLL_AFTER_S } })
    }
    return sendRanged(req, reply, {
      size: job.size,
      etag: fileEtag(job),
      lastModified: new Date(job.finishedAt ?? job.updatedAt),
      contentType: FILE_TYPES[job.format],
      filename: `export-${job.id}.${job.format === 'ndjson' ? 'ndjson' : formats[job.format].extension}`,
      read: (from, to) => fileBytes(store, job.id, from, to),
    })
  })
}

const READ_BATCH = 8

/** Bytes `from`–`to` (inclusive) of an export's file, a few stored chunks per query. */
async function * fileBytes (store: Store, id: number, from: number, to: number): AsyncGenerator<Uint8Array> {
  let pos = from
  while (pos <= to) {
    const chunks = await store.exports.readChunks(id, pos, to, READ_BATCH)
    if (chunks.length === 0) throw new Error(`export ${id} is missing bytes from ${pos}`)
    for (const c of chunks) {
      const start = pos - c.start
      const end = Math.min(to - c.start + 1, c.data.byteLength)
      yield c.data.subarray(start, end)
      pos = c.start + end
    }
  }
}

/** This instance's export worker: it takes jobs from the store's queue (docs/exports.md). */
function exportJobs ({ config, store, log, metrics, jobs, resources, clock }: PartContext): ExportWorker[] {
  const source = resources.find(r => r.exportable !== undefined)?.exportable
  if (source === undefined) throw new Error('exports need an exportable resource in the registry')
  const runs = runCounter(metrics, 'export')
  return [new ExportWorker({
    store,
    log: log.child({ component: 'exports' }),
    ...config.exports,
    source,
    formats: formatsOf(resources),
    site: config.publicBaseUrl,
    renderJob: job => renderExport(job, job.apiVersion as ApiVersion, job.linkBase),
    jobEvent: job => ({ type: exportEventType(job.status), data: renderExport(job, 1, ''), owner: job.owner, public: false }),
    webhookQueued: () => { jobs.wake(WEBHOOK_DELIVERIES_JOB) },
    runs,
    clock,
  })]
}

export const exportsResource: Resource = {
  name: 'exports',
  description: 'Exports of every post the requester may see, as NDJSON or WordPress\'s WXR: 202 jobs, polling, signed webhooks, ranged downloads (admin only)',
  path: '/exports',
  problems: exportsProblems,
  messages: exportsMessages,
  indexed: false,
  webhooks: {
    exportFinished: {
      post: {
        summary: 'An export ended',
        description: 'Sent to the `callback_url` of an export when it succeeds or fails, after that state is committed. Signed per Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the decoded `WEBHOOK_SECRET`. Delivered at least once: retried with exponential backoff and jitter until a 2xx answer, with the same `webhook-id` each time. `data` is the job in the version that started the export.',
        tags: ['exports'],
        parameters: [
          { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string', maxLength: 1024 }, description: 'Stable across retries: drop a message whose id you have seen.' },
          { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string', maxLength: 1024 }, description: 'Seconds since the epoch, of this attempt.' },
          { name: 'webhook-signature', in: 'header', required: true, schema: { type: 'string', maxLength: 1024 }, description: '`v1,<base64 signature>`.' },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { oneOf: [{ $ref: '#/components/schemas/ExportEventV1' }, { $ref: '#/components/schemas/ExportEventV2' }] } } },
        },
        responses: { '2XX': { description: 'Received; any other answer, or none within WEBHOOK_TIMEOUT_MS, is retried.' } },
      },
    },
  },
  schemas: EXPORT_SCHEMAS,
  eventTypes: EXPORT_EVENT_TYPES,
  routes: exportRoutes,
  jobs: exportJobs,
  settings: exportSettings,
  store: exportsStore,
}
