import { createHash, randomBytes } from 'node:crypto'
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../../../domain/principal.ts'
import { AppError, fieldError, validationFailed } from '../../../errors.ts'
import { preconditionOf, sendRepresentation, sendResource, weakEtag } from '../../../http/toolkit/conditional.ts'
import type { RouteContext } from '../../../http/contract/resources.ts'
import { COMMON_ERRORS, NoContentSchema, NotModifiedSchema, problemResponses, TimestampSchema } from '../../../http/contract/schemas.ts'
import { linkBase } from '../../../http/protocol/versioning.ts'
import { answerDelete, answerWrite } from '../../../http/toolkit/write.ts'
import { renderContent } from '../markdown.ts'
import type { Post } from '../post.ts'
import type { PostService } from '../post-service.ts'
import type { PreviewLink } from './preview-links-repository.ts'
import { renderPost } from '../representation.ts'
import type { Revision } from '../revisions/revision.ts'
import { PostIdParamsSchema, type PostIdParams, POST_VERSIONS } from '../schemas.ts'
import { publicUrls } from '../feeds/public-urls.ts'

/** 32 random bytes: 256 bits, twice what a guess must beat. */
const TOKEN_BYTES = 32
export const EXPIRES_IN_MIN = 60
export const EXPIRES_IN_MAX = 2_592_000
export const EXPIRES_IN_DEFAULT = 604_800

/** What is stored and looked up for a token: its SHA-256, so a database read never yields a usable token. */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** Whoever holds the link reads a post as its author would; search engines and referrers must not pass it on. */
const PREVIEW_HEADERS = {
  'cache-control': 'private, no-store',
  'x-robots-tag': 'noindex, nofollow',
  'referrer-policy': 'no-referrer',
}

const LinkIdSchema = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The link\'s id.' })
const RevisionNumberSchema = Type.Integer({ minimum: 1, maximum: 2_147_483_647 })

export const CreatePreviewLinkBodySchema = Type.Object({
  expires_in: Type.Optional(Type.Integer({ minimum: EXPIRES_IN_MIN, maximum: EXPIRES_IN_MAX, description: `Seconds the link works: ${EXPIRES_IN_MIN}–${EXPIRES_IN_MAX} (30 days); default ${EXPIRES_IN_DEFAULT} (7 days).` })),
  revision: Type.Optional({ ...RevisionNumberSchema, description: 'A revision number of the post: the link shows that revision, even after the post is published. Absent: the post as it is when the link is opened.' }),
}, { $id: 'CreatePreviewLinkBody', additionalProperties: false })
type CreatePreviewLinkBody = Static<typeof CreatePreviewLinkBodySchema>

const linkFields = {
  id: LinkIdSchema,
  url: Type.String({ maxLength: 300, description: 'Where the preview is shown: the reading site\'s `{SITE_BASE_URL}/p/{token}` when the site is on, else the API\'s path `/preview/{token}`. Absent from lists: the token is shown once.' }),
  expires_at: { ...TimestampSchema, description: 'When the link stops working.' },
  revision: Type.Union([RevisionNumberSchema, Type.Null()], { description: 'The revision it shows; null: the post as it is.' }),
  created_at: { ...TimestampSchema, description: 'When the link was made.' },
}

export const PreviewLinkSchema = Type.Object({
  ...linkFields,
  token: Type.String({ maxLength: 100, description: 'The secret (256 random bits, base64url). Shown only in this answer: the service keeps only its hash.' }),
}, { $id: 'PreviewLink', additionalProperties: false })

export const PreviewLinkListItemSchema = Type.Object({
  id: linkFields.id,
  expires_at: linkFields.expires_at,
  revision: linkFields.revision,
  created_at: linkFields.created_at,
}, { $id: 'PreviewLinkListItem', additionalProperties: false })

const LinkParamsSchema = Type.Object({ post_id: PostIdParamsSchema.properties.post_id, link_id: LinkIdSchema }, { additionalProperties: false })
type LinkParams = Static<typeof LinkParamsSchema>
// Any string: a truncated, padded or made-up token is a token that matches no link (404), not a malformed request.
// At most 200 characters, as the router takes in a path segment: a longer one never reaches a route.
const TokenParamsSchema = Type.Object({ token: Type.String({ maxLength: 200, description: 'The token a link was made with.' }) }, { additionalProperties: false })
type TokenParams = Static<typeof TokenParamsSchema>

/** The schemas the preview routes name (each has an `$id`). */
export const PREVIEW_LINK_SCHEMAS = [CreatePreviewLinkBodySchema, PreviewLinkSchema, PreviewLinkListItemSchema]

function listItem (link: PreviewLink) {
  return { id: link.id, expires_at: link.expiresAt, revision: link.revision, created_at: link.createdAt }
}

function previewNotFound (): AppError {
  return new AppError('PREVIEW_NOT_FOUND', 'This preview link does not exist, has expired or was revoked, or its post was deleted.')
}

/** Whoever holds a live link sees the post whatever its status, as an admin would. */
const LINK_HOLDER: Principal = { subject: 'preview-link', scopes: new Set(['admin']), kind: 'api-key' }

/**
 * The post as a pinned link shows it: the revision's fields over the post, with the HTML and a
 * derived excerpt made from the revision's content by the renderer every post goes through.
 */
export function pinnedPost (post: Post, revision: Revision): Post {
  const rendered = renderContent(revision.content)
  return {
    ...post,
    title: revision.title,
    content: revision.content,
    status: revision.status,
    publishAt: revision.publishAt,
    slug: revision.slug,
    tags: revision.tags,
    excerpt: revision.excerptDerived ? rendered.excerpt : revision.excerpt,
    excerptDerived: revision.excerptDerived,
    contentHtml: rendered.html,
    metaTitle: revision.metaTitle,
    metaDescription: revision.metaDescription,
    canonicalUrl: revision.canonicalUrl,
  }
}

/**
 * Preview links: a secret URL that shows one post (any status) to whoever holds it, without a
 * credential, until it expires or is deleted. Managed by the post's author or an admin.
 */
export async function previewLinkRoutes (app: FastifyInstance, ctx: RouteContext, reader: PostService): Promise<void> {
  const { version } = ctx
  const v = POST_VERSIONS[version]
  const tags = ['posts']
  const clock = () => ctx.clock.now()

  app.post<{ Params: PostIdParams, Body: CreatePreviewLinkBody | undefined }>('/posts/:post_id/preview-links', ctx.route({
    config: { requiredScope: 'posts:write', optionalBody: true },
    schema: {
      tags,
      summary: 'Make a preview link',
      description: 'A secret link (`url`, `/preview/{token}`) that shows the post, whatever its status, to anyone who holds it, with no credential, until it expires or is deleted. The token is in this answer only: the service keeps its hash. `revision` pins the link to that revision of the post. The post\'s author or an admin.',
      params: PostIdParamsSchema,
      body: Type.Ref(CreatePreviewLinkBodySchema),
      response: { 201: Type.Ref(PreviewLinkSchema), ...problemResponses(...COMMON_ERRORS, 403, 404, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const id = req.params.post_id
    const principal = req.principal as Principal
    const expiresIn = req.body?.expires_in ?? EXPIRES_IN_DEFAULT
    const revision = req.body?.revision ?? null
    await reader.writable(id, principal)
    if (revision !== null && await ctx.store.revisions.find(id, revision) === null) {
      throw validationFailed([fieldError('revision', 'INVALID_VALUE', `Post ${id} has no revision ${revision} (it never existed or was pruned).`)])
    }
    const token = randomBytes(TOKEN_BYTES).toString('base64url')
    return await answerWrite(ctx.store, req, reply, async uow => {
      const now = clock()
      const link = await uow.previewLinks.create({
        postId: id,
        tokenHash: hashToken(token),
        revision,
        createdBy: principal.subject,
        createdAt: now,
        expiresAt: new Date(now.getTime() + expiresIn * 1000),
      })
      const body = { ...listItem(link), token, url: publicUrls(ctx.config, '').preview(token) }
      return { status: 201, body, location: `${linkBase(req)}/posts/${id}/preview-links/${link.id}` }
    })
  })

  app.get<{ Params: PostIdParams }>('/posts/:post_id/preview-links', ctx.route({
    config: { requiredScope: 'posts:write' },
    schema: {
      tags,
      summary: 'List a post\'s preview links',
      description: 'The links that still work (not expired, not deleted), newest first, without their tokens. The post\'s author or an admin.',
      params: PostIdParamsSchema,
      response: { 200: Type.Array(Type.Ref(PreviewLinkListItemSchema)), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 422) },
    },
  }), async (req, reply) => {
    const id = req.params.post_id
    await reader.writable(id, req.principal as Principal)
    const items = (await ctx.store.previewLinks.listLive(id, clock())).map(listItem)
    return sendRepresentation(req, reply, items, { etag: weakEtag(JSON.stringify(items)), audience: 'private' })
  })

  app.delete<{ Params: LinkParams }>('/posts/:post_id/preview-links/:link_id', ctx.route({
    config: { requiredScope: 'posts:write' },
    schema: {
      tags,
      summary: 'Revoke a preview link',
      description: 'Its token stops working at once, on every instance. A link of another post, or one already gone: 404 PREVIEW_NOT_FOUND. `If-Match` / `If-Unmodified-Since` are checked against the post (412 when stale). The post\'s author or an admin.',
      params: LinkParamsSchema,
      response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 422) },
    },
  }), async (req, reply) => {
    const { post_id: id, link_id: linkId } = req.params
    const post = await reader.writable(id, req.principal as Principal)
    const precondition = preconditionOf(req, 'posts')
    if (precondition !== undefined && !precondition(post)) throw new AppError('PRECONDITION_FAILED')
    return await answerDelete(ctx.store, req, reply, async uow => {
      if (!await uow.previewLinks.delete(id, linkId)) throw previewNotFound()
    })
  })

  app.get<{ Params: TokenParams }>('/preview/:token', ctx.route({
    config: {
      ignoresCredentials: true,
      rateLimitKey: (req: FastifyRequest) => `preview:${hashToken((req.params as TokenParams).token)}`,
    },
    schema: {
      tags,
      summary: 'Read a post through a preview link',
      description: 'No credential needed (an `Authorization` header is ignored). The post as its author sees it, whatever its status; a link pinned to a revision shows that revision\'s fields over the post, its HTML and excerpt made from the revision\'s content. Once the post is published, a link not pinned answers 308 to the post\'s public URL (`{SITE_BASE_URL}/{slug}` when the reading site is on, else `/posts/by-slug/{slug}`). An unknown, expired or revoked token, or one whose post was deleted: 404 PREVIEW_NOT_FOUND. Always `Cache-Control: private, no-store`, `X-Robots-Tag: noindex, nofollow`, `Referrer-Policy: no-referrer`. Rate limited per token.',
      params: TokenParamsSchema,
      response: {
        200: Type.Ref(v.post),
        304: NotModifiedSchema,
        308: Type.Null({ description: 'The post is published: `Location` names its public URL.' }),
        // 422: an unknown query parameter, as everywhere.
        ...problemResponses(...COMMON_ERRORS, 404, 422),
      },
    },
  }), async (req, reply: FastifyReply) => {
    // Every answer, a 404 included, carries them: the URL itself is the secret.
    reply.headers(PREVIEW_HEADERS)
    const link = await ctx.store.previewLinks.findByTokenHash(hashToken(req.params.token), clock())
    if (link === null) throw previewNotFound()
    const post = await ctx.store.posts.findById(link.postId, LINK_HOLDER)
    if (post === null) throw previewNotFound()
    if (link.revision === null) {
      if (post.status === 'published') {
        return reply.code(308).header('location', publicUrls(ctx.config, linkBase(req)).post(post.slug)).send()
      }
      return sendPreview(req, reply, post, renderPost(post, version, linkBase(req)))
    }
    const revision = await ctx.store.revisions.find(link.postId, link.revision)
    if (revision === null) throw previewNotFound()
    return sendPreview(req, reply, post, renderPost(pinnedPost(post, revision), version, linkBase(req)))
  })
}

/** The post's own validators (a pinned link shows the post's id, dates and links too), never cached. */
function sendPreview (req: FastifyRequest, reply: FastifyReply, post: Post, body: unknown): FastifyReply {
  return sendResource(req, reply, 'posts', post, body, 'private')
}
