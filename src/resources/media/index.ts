import type { Clock } from '../../clock.ts'
import { createHash, randomBytes } from 'node:crypto'
import multipart from '@fastify/multipart'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.ts'
import type { Principal, Viewer } from '../../domain/principal.ts'
import { ROLE_ACTIONS } from '../../domain/roles.ts'
import { AppError } from '../../errors.ts'
import { appendVary } from '../../http/pipeline/caching.ts'
import { listHandler } from '../../http/toolkit/collection.ts'
import { preconditionOf, sendResource } from '../../http/toolkit/conditional.ts'
import { MERGE_PATCH } from '../../http/pipeline/content-type.ts'
import { sendRanged } from '../../http/toolkit/ranges.ts'
import type { ImageIntake, PartContext, Resource, RouteContext, Services } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NoContentSchema, NotModifiedSchema, problemResponses, SYSTEM_ERRORS } from '../../http/contract/schemas.ts'
import { type ApiVersion, idNameOf, linkBase } from '../../http/protocol/versioning.ts'
import { answerDelete, answerWrite, type Written, writtenResource } from '../../http/toolkit/write.ts'
import { writeCurrent } from '../../http/toolkit/action.ts'
import type { Store, UnitOfWork } from '../../store/store.ts'
import { factsOf, mediaCatalogue } from './catalogue.ts'
import { FORMATS, type Format, processUpload } from './image.ts'
import { blobBytes, ensureBlob, type Library, openLibrary, readAll, variantOf, writeBlob } from './library.ts'
import { mediaProblems, mediaFieldCodes } from './problems.ts'
import * as S from './schemas.ts'
import { mediaSettings } from './settings.ts'
import { type Media, type MediaFile, mediaStore } from './store.ts'
import { mediaSweep } from './sweep.ts'
import { type Received, receiveUpload, sanitiseFilename } from './upload.ts'
import { uploadRoutes } from './uploads.ts'

const WRITE = { requiredScope: 'media:write', orScopes: ['posts:write'] } as const
const tags = ['media']
const MEDIA_EVENT_TYPES = ['media.created', 'media.updated', 'media.deleted'] as const
/** Files and variants never change under their URL: any cache may keep them for a year. */
export const IMMUTABLE = 'public, max-age=31536000, immutable'
const DEFAULT_QUALITY = 75
const EXTENSIONS: Record<Format, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', avif: 'avif', gif: 'gif' }

/** Each upload as read before its handler runs. */
const uploaded = new WeakMap<FastifyRequest, Received>()

const notFound = (id: string) => new AppError('MEDIA_NOT_FOUND', `No media ${id} exists, or it is not yours.`)

/**
 * What a change of a media the viewer does not see answers: to a person whose role may not change
 * others' media, 403 ROLE_FORBIDS when it exists (its file is public anyway); else 404.
 */
async function hidden (uow: UnitOfWork, viewer: Viewer, id: string): Promise<AppError> {
  if (viewer?.person !== undefined && await uow.media.findPublic(id) !== null) {
    return new AppError('ROLE_FORBIDS', `Your role (${viewer.person.role}) changes only your own media: another's needs the ${ROLE_ACTIONS['media.any'].least} role.`)
  }
  return notFound(id)
}

function formatOf (contentType: string): Format {
  return (Object.entries(FORMATS).find(([, t]) => t === contentType)?.[0] ?? 'jpeg') as Format
}

/** The media's members, its id named as `version` names it. */
function mediaData (m: Media, idName: string): Record<string, unknown> {
  return {
    [idName]: m.id,
    filename: m.filename,
    content_type: m.contentType,
    bytes: m.bytes,
    width: m.width,
    height: m.height,
    sha256: m.sha256,
    alt: m.alt,
    caption: m.caption,
    placeholder: m.placeholder,
    author: m.owner,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
  }
}

export function renderMedia (m: Media, version: ApiVersion, base: string): Record<string, unknown> {
  const self = `${base}/media/${m.id}`
  return { ...mediaData(m, idNameOf(version, 'media')), _links: { self: { href: self }, file: { href: `${self}/file` }, image: { href: `${self}/image` } } }
}

/** A media as a write answers it: its representation, its validators (the toolkit's), and for a 201 its Location. */
function written (req: FastifyRequest, m: Media, version: ApiVersion, status: 200 | 201): Written {
  return writtenResource(req, 'media', m, renderMedia(m, version, linkBase(req)), status)
}

/** The media's event: its version-1 representation, seen by its owner (and admins). */
function mediaEvent (type: typeof MEDIA_EVENT_TYPES[number], m: Media) {
  return { type, data: type === 'media.deleted' ? { id: m.id } : renderMedia(m, 1, ''), owner: m.owner, public: false }
}

/** An upload processed and its blob written (claimed), ready to be recorded in a unit of work. */
interface Prepared { readonly id: string, readonly image: Awaited<ReturnType<typeof processUpload>>, readonly claim: string }

async function prepareUpload (library: Library, store: Store, config: Config, bytes: Buffer, declared: string | undefined): Promise<Prepared> {
  const image = await processUpload(bytes, declared, config.media.maxPixels)
  const id = randomBytes(16).toString('base64url')
  const claim = await writeBlob(library, store, image.sha256, image.data, image.contentType, config.requestTimeoutMs)
  return { id, image, claim }
}

/**
 * Records a prepared upload: the row, the blob's claim let go, `media.created`, and the blob written
 * again after commit should a sweep have removed it meanwhile. The one way in for POST /media and tus.
 */
async function recordUpload (uow: UnitOfWork, library: Library, { id, image, claim }: Prepared, fields: { owner: string, filename: string | null, alt: string, caption: string }, now: Date): Promise<Media> {
  const m = await uow.media.insert({
    id,
    owner: fields.owner,
    filename: fields.filename ?? defaultName(id, image.format),
    contentType: image.contentType,
    bytes: image.data.length,
    width: image.width,
    height: image.height,
    sha256: image.sha256,
    alt: fields.alt,
    caption: fields.caption,
    placeholder: image.placeholder,
  }, now)
  await uow.media.releaseBlob(claim)
  uow.events.record(mediaEvent('media.created', m))
  uow.onCommit(async () => { await ensureBlob(library, image.sha256, image.data, image.contentType) })
  return m
}

/** Images another resource fetched (an import's), taken in by the upload's own path: prepareUpload, recordUpload. */
const mediaIntake: ImageIntake = {
  async add (store, services, bytes, fields, config, clock) {
    const library = services.mediaLibrary
    const prepared = await prepareUpload(library, store, config, bytes, undefined)
    const m = await store.transaction(async uow => {
      const same = await uow.media.findByDigest(fields.owner, prepared.image.sha256)
      if (same === null) return await recordUpload(uow, library, prepared, { ...fields, filename: sanitiseFilename(fields.filename), caption: '' }, clock.now())
      await uow.media.releaseBlob(prepared.claim)
      return same
    })
    return factsOf(m, config.media.widths)
  },
}

/** The upload's name when the client gave none: its id and the extension of its format. */
function defaultName (id: string, format: Format): string {
  return `${id}.${EXTENSIONS[format]}`
}

async function mediaRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, store, config } = ctx
  const library = ctx.services.mediaLibrary
  const [MediaRef, ItemRef] = version === 1 ? [S.MediaV1Schema, S.MediaListItemV1Schema] : [S.MediaV2Schema, S.MediaListItemV2Schema]
  const READ_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 422)
  const find = async (req: FastifyRequest<{ Params: S.MediaIdParams }>): Promise<Media> => {
    const m = await store.media.find(req.params.media_id, req.principal)
    if (m === null) throw notFound(req.params.media_id)
    return m
  }

  // Uploads take the file itself or a form: their bodies are read here, as a stream, within MEDIA_MAX_BYTES.
  await app.register(async uploads => {
    uploads.addContentTypeParser([...Object.values(FORMATS), 'application/octet-stream'], (_req, payload, done) => { done(null, payload) })
    await uploads.register(multipart, { limits: { fileSize: config.media.maxBytes } })
    const bodyTypes = [...Object.values(FORMATS), 'application/octet-stream', 'multipart/form-data']
    uploads.post('/media', {
      // The upload is read before the Idempotency-Key is claimed, so that the key is bound to the bytes.
      preValidation: async req => {
        const received = await receiveUpload(req, config.media.maxBytes)
        uploaded.set(req, received)
        req.body = { sha256: createHash('sha256').update(received.bytes).digest('hex'), type: received.declared ?? null, filename: received.filename, alt: received.alt, caption: received.caption }
      },
      ...ctx.route({
        config: { ...WRITE, bodyTypes },
        schema: {
          tags,
          summary: 'Upload an image',
          description: 'The body is the file itself (its `Content-Type`, and optionally `Content-Disposition: attachment; filename="…"`), or `multipart/form-data` with one part `file` and optional parts `alt` and `caption`. The content is judged by its bytes: JPEG, PNG, WebP, AVIF or GIF, else 415 (a declared type that disagrees with the bytes too). Larger than `MEDIA_MAX_BYTES`: 413 before the body is read whole. More pixels than `MEDIA_MAX_PIXELS` (read from the header, before any decoding) or a file the decoder rejects: 422 `IMAGE_UNREADABLE`. The stored file is the image as seen (EXIF orientation applied) without metadata (EXIF, GPS, XMP, comments). Needs `media:write` or `posts:write`.',
          body: {
            content: {
              ...Object.fromEntries(Object.values(FORMATS).map(t => [t, { schema: { description: 'The image file.' } }])),
              'multipart/form-data': { schema: { description: 'Parts: `file` (the image, required), `alt` (0–500 characters), `caption` (0–1 000).' } },
            },
          },
          response: { 201: Type.Ref(MediaRef), ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) },
        },
      }),
    }, async (req, reply) => {
      const received = uploaded.get(req)!
      const prepared = await prepareUpload(library, store, config, received.bytes, received.declared)
      return await answerWrite(ctx.store, req, reply, async uow => {
        const owner = (req.principal as Principal).subject
        const m = await recordUpload(uow, library, prepared, { owner, filename: received.filename, alt: received.alt, caption: received.caption }, ctx.clock.now())
        return written(req, m, version, 201)
      })
    })
  })

  app.get('/media', ctx.route({
    config: WRITE,
    schema: { tags, summary: 'List your media (editors and admin: all)', description: 'Newest first; `q` matches filename, alt and caption. Paged as posts are.', querystring: S.ListMediaQuerySchema, response: { 200: Type.Array(Type.Ref(ItemRef)), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), listHandler(ctx.cursors, {
    collection: S.MEDIA,
    fieldNames: S.MEDIA_FIELD_NAMES[version],
    defaultFields: () => S.MEDIA_FIELD_NAMES[version],
    data: (m: Media) => mediaData(m, idNameOf(version, 'media')),
    selfLink: true,
    audience: 'private',
    version: m => `${m.id}:${m.revision}:${m.updatedAt}`,
    read: async (req, query) => await store.media.list(query as never, req.principal),
  }))

  app.get<{ Params: S.MediaIdParams }>('/media/:media_id', ctx.route({
    config: WRITE,
    schema: { tags, summary: 'Read a media', description: 'Its owner, an editor or an admin; to anyone else it does not exist (404).', params: S.MediaIdParamsSchema, response: { 200: Type.Ref(MediaRef), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const m = await find(req)
    return sendResource(req, reply, 'media', m, renderMedia(m, version, linkBase(req)), 'private')
  })

  app.patch<{ Params: S.MediaIdParams, Body: S.MediaPatch }>('/media/:media_id', ctx.route({
    config: { ...WRITE, bodyTypes: [MERGE_PATCH] },
    schema: {
      tags,
      summary: 'Change a media\'s filename, alt or caption',
      description: 'An RFC 7396 merge patch (`application/merge-patch+json`) of `alt` (0–500 characters), `caption` (0–1 000) and `filename` (1–255, no `/`, `\\`, NUL or control characters); null empties `alt` or `caption`. `If-Match` with its ETag makes the change conditional (412).',
      params: S.MediaIdParamsSchema,
      body: Type.Ref(S.MediaPatchSchema),
      response: { 200: Type.Ref(MediaRef), 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const changes = {
      ...(req.body.filename !== undefined ? { filename: req.body.filename } : {}),
      ...(req.body.alt !== undefined ? { alt: req.body.alt ?? '' } : {}),
      ...(req.body.caption !== undefined ? { caption: req.body.caption ?? '' } : {}),
    }
    return await answerWrite(ctx.store, req, reply, async uow => {
      const updated = await writeCurrent<Media, Media>(preconditionOf(req, 'media'), async () => {
        const current = await uow.media.find(req.params.media_id, req.principal)
        if (current === null) throw await hidden(uow, req.principal, req.params.media_id)
        return current
      }, async current => {
        const m = await uow.media.update(current.id, req.principal, changes, ctx.clock.now(), current.revision)
        if (m === null) return { outcome: 'missing' }
        if (m === 'stale') return { outcome: 'stale' }
        // Posts and pages that show the image show its alt text and caption: every instance's cache hears of it.
        uow.events.record(mediaEvent('media.updated', m))
        return { outcome: 'done', value: m } as const
      }, () => notFound(req.params.media_id))
      return written(req, updated, version, 200)
    })
  })

  app.delete<{ Params: S.MediaIdParams }>('/media/:media_id', ctx.route({
    config: WRITE,
    schema: {
      tags,
      summary: 'Delete a media',
      description: 'Its file and variants answer 404 at once, on every instance; the stored bytes are removed by the next sweep unless another media holds the same bytes. A media that a post holds as its feature image: 409 `MEDIA_IN_USE`.',
      params: S.MediaIdParamsSchema,
      response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 422) },
    },
  }), async (req, reply) => await answerDelete(ctx.store, req, reply, async uow => {
    const m = await uow.media.find(req.params.media_id, req.principal)
    if (m === null) throw await hidden(uow, req.principal, req.params.media_id)
    if (preconditionOf(req, 'media')?.(m) === false) throw new AppError('PRECONDITION_FAILED')
    for (const holder of ctx.resources.flatMap(r => r.imageHolder ?? [])) {
      if (await holder.holds(uow, m.id)) throw new AppError('MEDIA_IN_USE', `Media ${m.id} is a post's feature image; give that post another one (or none) first.`)
    }
    await uow.media.delete(m.id)
    uow.events.record(mediaEvent('media.deleted', m))
  }))
}

/** The AVIF or WebP a client's Accept names (with a q above 0), else null. */
function negotiatedFormat (accept: string | undefined): Format | null {
  const named = new Set<string>()
  for (const part of (accept ?? '').split(',')) {
    const [type = '', ...params] = part.split(';').map(s => s.trim().toLowerCase())
    const q = params.find(p => p.startsWith('q='))
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue
    named.add(type)
  }
  if (named.has('image/avif')) return 'avif'
  if (named.has('image/webp')) return 'webp'
  return null
}

interface ImageQuery { w?: number, format?: typeof S.IMAGE_FORMATS[number], q?: number }

/** Uploads (`/uploads`) and the public `/file` and `/image`, the same in every version (the files cached by anyone for a year). */
async function fileRoutes (app: FastifyInstance, ctx: { readonly config: Config, readonly store: Store, readonly services: Services, readonly clock: Clock }): Promise<void> {
  const { store, config } = ctx
  const library = ctx.services.mediaLibrary
  await uploadRoutes(app, { config }, WRITE, async (owner, bytes, filename, alt) => {
    const prepared = await prepareUpload(library, store, config, bytes, undefined)
    const m = await store.transaction(async uow => await recordUpload(uow, library, prepared, { owner, filename, alt, caption: '' }, ctx.clock.now()))
    return m.id
  })
  await publicFileRoutes(app, ctx, true)
}

/**
 * `/file` and `/image` alone, the same on the API's listener (`documented`: with their OpenAPI
 * description) and on the reading site's, so that a page's images come from its own origin.
 */
async function publicFileRoutes (app: FastifyInstance, ctx: { readonly config: Config, readonly store: Store, readonly services: Services }, documented: boolean): Promise<void> {
  const { store, config } = ctx
  const library = ctx.services.mediaLibrary
  const config_ = { ignoresCredentials: true }
  const imageTypes = Object.values(FORMATS)
  const binary = (description: string, extra: Record<string, unknown> = {}) => ({
    description,
    headers: {
      etag: { type: 'string', maxLength: 100, description: 'Strong: the SHA-256 of the bytes.' },
      'cache-control': { type: 'string', maxLength: 100, description: `\`${IMMUTABLE}\`` },
      'accept-ranges': { type: 'string', enum: ['bytes'] },
      ...extra,
    },
    content: Object.fromEntries(imageTypes.map(t => [t, { schema: { type: 'string', maxLength: Number.MAX_SAFE_INTEGER } }])),
  })
  const responses = {
    200: binary('The bytes.'),
    206: binary('The requested bytes.', { 'content-range': { type: 'string', maxLength: 100 } }),
    304: NotModifiedSchema,
    ...problemResponses(...SYSTEM_ERRORS, 404, 406, 416, 422),
  }
  const findPublic = async (id: string): Promise<MediaFile> => {
    const m = await store.media.findPublic(id)
    if (m === null) throw new AppError('MEDIA_NOT_FOUND', `No media ${id} exists.`)
    return m
  }
  const send = (req: FastifyRequest, reply: FastifyReply, m: MediaFile, sha256: string, bytes: number, format: Format) => {
    reply.header('x-content-type-options', 'nosniff')
    return sendRanged(req, reply, {
      size: bytes,
      etag: `"${sha256}"`,
      lastModified: new Date(m.createdAt),
      contentType: FORMATS[format],
      filename: `${m.id}.${EXTENSIONS[format]}`,
      cacheControl: IMMUTABLE,
      inline: true,
      read: (from, to) => blobBytes(library, sha256, bytes, from, to),
    })
  }

  app.get<{ Params: S.MediaIdParams }>('/media/:media_id/file', {
    compress: false,
    config: config_,
    schema: documented
      ? {
          tags,
          summary: 'The stored file of a media',
          description: 'Public. The bytes as uploaded, less their metadata. Byte ranges as an export\'s file (206, 416). `Cache-Control: public, max-age=31536000, immutable`, a strong ETag, 304, `X-Content-Type-Options: nosniff`. A deleted media answers 404.',
          params: S.MediaIdParamsSchema,
          produces: imageTypes,
          response: responses,
        }
      : { params: S.MediaIdParamsSchema },
  }, async (req, reply) => {
    const m = await findPublic(req.params.media_id)
    return send(req, reply, m, m.sha256, m.bytes, formatOf(m.contentType))
  })

  app.get<{ Params: S.MediaIdParams, Querystring: ImageQuery }>('/media/:media_id/image', {
    compress: false,
    config: config_,
    schema: documented
      ? {
          tags,
          summary: 'A variant of a media\'s image',
          description: `Public. \`w\`: one of ${config.media.widths.join(', ')} (a width above the original's gives the original's); \`format\`: \`auto\` (default: AVIF or WebP when Accept names it, else the original's format; \`Vary: Accept\`), \`webp\`, \`avif\`, \`jpeg\`, \`png\`; \`q\` 30–95 (default 75). Any other value: 422; no other transform is offered. Each variant is computed once across all instances and kept; cached like \`/file\`.`,
          params: S.MediaIdParamsSchema,
          querystring: S.imageQuerySchema(config.media.widths),
          produces: imageTypes,
          response: { ...responses, 200: binary('The variant.', { vary: { type: 'string', maxLength: 200 } }) },
        }
      : { params: S.MediaIdParamsSchema, querystring: S.imageQuerySchema(config.media.widths) },
  }, async (req, reply) => {
    const m = await findPublic(req.params.media_id)
    const asked = req.query.format ?? 'auto'
    const format: Format = asked === 'auto' ? (negotiatedFormat(req.headers.accept) ?? formatOf(m.contentType)) : asked
    if (asked === 'auto') appendVary(reply, 'Accept')
    const key = { mediaId: m.id, width: Math.min(req.query.w ?? m.width, m.width), format, quality: req.query.q ?? DEFAULT_QUALITY }
    const v = await variantOf(library, store, key, m.sha256, FORMATS[format], config.requestTimeoutMs, req.abandoned)
    return send(req, reply, m, v.sha256, v.bytes, format)
  })
}

/** The storage, opened once per app; closed with it. */
function mediaServices (ctx: PartContext): Partial<Services> {
  const library = openLibrary(ctx.config, ctx.metrics, ctx.clock)
  if (ctx.config.media.storage.kind === 'local' && ctx.store.kind === 'postgres') {
    ctx.log.warn({ dir: ctx.config.media.storage.dir }, 'MEDIA_STORAGE=local with PostgreSQL: uploaded images are on this instance only; other instances answer 404 for their files (use MEDIA_STORAGE=s3 to share them)')
  }
  ctx.lifecycle.onClosed(async () => { await (await library.blobs.catch(() => null))?.close() })
  return { mediaLibrary: library }
}

export const mediaResource: Resource = {
  name: 'media',
  description: 'Images: uploads (whole or resumable), their files, and variants made on request for responsive pages',
  path: '/media',
  problems: mediaProblems,
  fieldCodes: mediaFieldCodes,
  schemas: S.MEDIA_SCHEMAS,
  eventTypes: MEDIA_EVENT_TYPES,
  scopes: [WRITE.requiredScope],
  settings: mediaSettings,
  store: mediaStore,
  services: mediaServices,
  routes: mediaRoutes,
  unversionedRoutes: fileRoutes,
  unversionedPaths: ['/media/*/file', '/media/*/image', '/uploads', '/uploads/*'],
  siteRoutes: async (app, ctx) => { await publicFileRoutes(app, ctx, false) },
  images: mediaCatalogue,
  imageIntake: mediaIntake,
  jobs: (ctx: PartContext) => [mediaSweep(ctx.store, ctx.services.mediaLibrary, ctx.config, ctx.log)],
}

export { readAll }
