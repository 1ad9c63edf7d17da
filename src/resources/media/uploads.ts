import { randomBytes } from 'node:crypto'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import { FileStore } from '@tus/file-store'
import { Server, type Upload } from '@tus/server'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.ts'
import { isAdmin, type Principal } from '../../domain/principal.ts'
import { AppError, type ProblemCode } from '../../errors.ts'
import { COMMON_ERRORS, problemResponses } from '../../http/contract/schemas.ts'
import { sanitiseFilename } from './upload.ts'

const TUS_BODY = 'application/offset+octet-stream'

/** What a finished resumable upload becomes: a media, recorded as POST /media records one. */
export type RecordUpload = (owner: string, bytes: Buffer, filename: string | null, alt: string) => Promise<string>

/** Where unfinished uploads are kept, and for how long. */
export function uploadStore (config: Config): { store: FileStore, directory: string } {
  const directory = path.join(config.dataDir, 'uploads')
  return { directory, store: new FileStore({ directory, expirationPeriodInMilliseconds: config.media.uploadExpiryH * 3600_000 }) }
}

/** Who sent each request tus is handling: its hooks see the web Request handed to it. */
const owners = new WeakMap<object, string>()
/** A refusal of the service's own (an image refused as POST /media refuses it), answered as such. */
const refusals = new WeakMap<object, AppError>()

function ownerOf (req: object): string {
  const owner = owners.get(req)
  if (owner === undefined) throw new Error('a resumable upload without its caller')
  return owner
}

/** tus's refusals (plain text) as the service's problems, by status; 410 (expired) is a missing upload. */
const TUS_PROBLEMS: Readonly<Record<number, ProblemCode>> = {
  400: 'BAD_REQUEST',
  403: 'FORBIDDEN',
  404: 'UPLOAD_NOT_FOUND',
  409: 'CONFLICT',
  410: 'UPLOAD_NOT_FOUND',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
}

/** The Node request as the web Request @tus/server's `handleWeb` takes, its body streamed unread. */
function webRequest (req: FastifyRequest): Request {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    // An empty Upload-Metadata is no metadata (as tusd and tus-js-client read it), not a malformed one.
    if (name === 'upload-metadata' && String(value).trim() === '') continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  // Only tus's own type is handed on unread; any other body was parsed (or refused) by the core.
  const hasBody = (req.method === 'POST' || req.method === 'PATCH') && req.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === TUS_BODY
  return new Request(new URL(req.url, 'http://localhost'), {
    method: req.method,
    headers,
    ...(hasBody ? { body: Readable.toWeb(req.raw) as ReadableStream, duplex: 'half' } : {}),
  } as RequestInit)
}

/**
 * tus 1.0.0 resumable uploads (Creation, Termination, Expiration) at `/uploads`, by @tus/server on
 * files under `DATA_DIR/uploads`. The caller's identity is written into the upload's metadata when
 * it is created; only its owner (or an admin) may append to, read or end it. When the last byte
 * arrives the file is processed as a direct upload, the media recorded, the partial file removed,
 * and the final PATCH answers 204 with `Media-Location`.
 */
export function resumableUploads (config: Config, record: RecordUpload): { server: Server, store: FileStore, directory: string } {
  const { store, directory } = uploadStore(config)
  const server = new Server({
    path: '/uploads',
    datastore: store,
    maxSize: config.media.maxBytes,
    relativeLocation: true,
    respectForwardedHeaders: false,
    namingFunction: () => randomBytes(16).toString('hex'),
    // The owner is the service's to say: a client's `owner` entry is replaced by the caller.
    async onUploadCreate (req, upload) {
      return { metadata: { ...upload.metadata, owner: ownerOf(req as never) } }
    },
    exposedHeaders: ['Media-Location'],
    async onUploadFinish (req, upload: Upload) {
      const file = path.join(directory, upload.id)
      try {
        const bytes = await fsp.readFile(file)
        const meta = upload.metadata ?? {}
        const id = await record(meta.owner ?? '', bytes, sanitiseFilename(meta.filename), (meta.alt ?? '').replaceAll('\u0000', '').slice(0, 500))
        return { status_code: 204, headers: { 'Media-Location': `/media/${id}` } }
      } catch (err) {
        if (err instanceof AppError) {
          refusals.set(req, err)
          // tus only needs to refuse: the refusal itself is answered (above), as the catalogue says.
          throw Object.assign(new Error(err.message), { status_code: 400, body: `${err.code}: ${err.message}\n` })
        }
        throw err
      } finally {
        // Finished or refused, the partial file has served its purpose: nothing half-stored is kept.
        await store.remove(upload.id).catch(() => {})
      }
    },
  })
  return { server, store, directory }
}

/** Registers `/uploads` (and `/uploads/{id}`): the core checks credential and scope first, then tus answers. */
export async function uploadRoutes (app: FastifyInstance, ctx: { config: Config }, auth: { requiredScope: string, orScopes: readonly string[] }, record: RecordUpload): Promise<void> {
  const { config } = ctx
  const tus = resumableUploads(config, record)
  await fsp.mkdir(tus.directory, { recursive: true })

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const principal = req.principal as Principal
    const id = (req.params as { upload_id?: string }).upload_id
    if (id !== undefined) {
      const upload = await tus.store.getUpload(id).catch(() => null)
      // Someone else's upload does not exist for the caller.
      if (upload !== null && upload.metadata?.owner !== principal.subject && !isAdmin(principal)) throw new AppError('UPLOAD_NOT_FOUND', `No upload ${id} exists, or it is not yours.`)
    }
    const request = webRequest(req)
    owners.set(request, principal.subject)
    const response = await tus.server.handleWeb(request)
    if (response.status >= 400) {
      const refusal = refusals.get(request)
      if (refusal !== undefined) throw refusal
      const text = (await response.text()).trim()
      const code = TUS_PROBLEMS[response.status]
      if (code === undefined) throw new Error(`tus answered ${response.status}: ${text}`)
      throw new AppError(code, `${text.replace(/\.?$/, '')}.`)
    }
    reply.code(response.status)
    for (const [name, value] of response.headers) {
      if (name !== 'content-length' && name !== 'content-type') reply.header(name, value)
    }
    if (response.body === null) return await reply.send()
    return await reply.send(Readable.fromWeb(response.body as WebReadableStream))
  }

  await app.register(async scope => {
    // tus reads the request itself: the body is handed on unread.
    scope.addContentTypeParser(TUS_BODY, (_req, payload, done) => { done(null, payload) })
    const tags = ['media']
    const headers = { type: 'object', properties: { 'tus-resumable': { type: 'string', const: '1.0.0' } } }
    // tus's discovery: OPTIONS on either path says the protocol, its version, extensions and size limit.
    const optionsHeaders = { 'tus-resumable': '1.0.0', 'tus-version': '1.0.0', 'tus-extension': 'creation,termination,expiration', 'tus-max-size': String(config.media.maxBytes) }
    const common = { ...auth, bodyTypes: [TUS_BODY], optionsHeaders }
    const errors = problemResponses(...COMMON_ERRORS, 403, 404, 409, 410, 412, 413, 415, 422)
    scope.post('/uploads', {
      config: common,
      schema: {
        tags,
        summary: 'Start a resumable upload (tus 1.0.0)',
        description: 'tus 1.0.0 Creation: `Tus-Resumable: 1.0.0`, `Upload-Length` (at most `MEDIA_MAX_BYTES`: else 413), `Upload-Metadata` with `filename` and `alt` (base64). Answers 201 with `Location: /uploads/{upload_id}` and `Upload-Expires` (after `UPLOAD_EXPIRY_H`). Needs `media:write` or `posts:write`, as `/media`.',
        headers,
        response: { 201: { description: 'Created; `Location` names the upload. No body.', content: { 'text/plain': { schema: { type: 'string', maxLength: 0 } } } }, ...errors },
      },
    }, handle)
    for (const method of ['HEAD', 'PATCH', 'DELETE'] as const) {
      scope.route({
        method,
        url: '/uploads/:upload_id',
        config: common,
        schema: {
          tags,
          summary: { HEAD: 'The offset of a resumable upload', PATCH: 'Append to a resumable upload', DELETE: 'End a resumable upload (tus Termination)' }[method],
          description: {
            HEAD: '`Upload-Offset`: how many bytes the service holds; resume from there. An expired or ended upload: 404 or 410.',
            PATCH: '`Content-Type: application/offset+octet-stream`, `Upload-Offset` equal to the service\'s (else 409). When the last byte arrives the upload becomes a media: 204 with `Media-Location: /media/{media_id}` (no `Location`); an image refused as `POST /media` refuses it answers that status, and the upload is gone.',
            DELETE: '204; the partial file is removed.',
          }[method],
          params: { type: 'object', properties: { upload_id: { type: 'string', pattern: '^[0-9a-f]{32}$', minLength: 32, maxLength: 32 } }, required: ['upload_id'] },
          ...(method === 'PATCH' ? { body: { content: { [TUS_BODY]: { schema: { description: 'The bytes from `Upload-Offset` on.' } } } } } : {}),
          response: { [method === 'HEAD' ? 200 : 204]: method === 'HEAD' ? { description: 'The tus headers (`Upload-Offset`, `Upload-Length`, `Upload-Expires`); no body.', content: { 'text/plain': { schema: { type: 'string', maxLength: 0 } } } } : { description: 'Done (tus headers).', type: 'null' }, ...errors },
        },
        handler: handle,
      })
    }
  })
}
