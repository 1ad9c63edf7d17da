import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { listHandler } from '../../http/toolkit/collection.ts'
import { pagingQueryProperties, type CollectionSpec } from '../../http/toolkit/paging.ts'
import type { RouteContext } from '../../http/contract/resources.ts'
import type { Store } from '../../store/store.ts'
import { COMMON_ERRORS, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import type { TagCount, TagsQuery } from './store.ts'
import { type ContentImages, renderContent } from './markdown.ts'
import { CONTENT_MAX, TAG_MAX } from './limits.ts'

export const TagSchema = Type.Object({
  name: Type.String({ maxLength: TAG_MAX, description: 'The tag, as first spelled (in byte order) among the posts holding it.' }),
  count: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'How many posts you may see hold it.' }),
}, { $id: 'Tag', additionalProperties: false })

export const TagListItemSchema = Type.Partial(TagSchema, { $id: 'TagListItem', additionalProperties: false })

const ListTagsQuerySchema = Type.Object({
  q: Type.Optional(Type.String({ minLength: 1, maxLength: TAG_MAX, pattern: '\\S', description: 'A case-insensitive prefix of the name.' })),
  ...Type.Partial(Type.Object(pagingQueryProperties)).properties,
}, { additionalProperties: false })

export const tagsCollection: CollectionSpec<'name' | 'count'> = {
  name: 'tags',
  sortKeys: ['name', 'count'],
  // Most used first, then by name.
  defaultSort: '-count,name',
  includes: [],
}

/** `GET /tags`: every tag on a post the caller may see, with counts, paged as every list. */
export async function tagRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  app.get('/tags', ctx.route({
    config: { publicCache: true },
    schema: {
      tags: ['posts'],
      summary: 'List tags',
      description: 'Every tag on a post you may see, with the number of such posts. Default order `-count,name`; `sort` takes `name` (case-insensitive) and `count`; `q` is a case-insensitive prefix. Paged like posts.',
      querystring: ListTagsQuerySchema,
      response: { 200: Type.Array(Type.Ref(TagListItemSchema)), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 422) },
    },
  }), listHandler(ctx.cursors, {
    collection: tagsCollection,
    fieldNames: ['name', 'count'],
    defaultFields: () => ['name', 'count'],
    data: (t: TagCount) => ({ name: t.name, count: t.count }),
    selfLink: false,
    audience: 'public',
    // The tie-breaker `id` is the tag's case-folded key; `name` sorts by it too.
    sortValue: (t, term) => term.key === 'count' ? t.count : t.id,
    version: t => `${t.id}:${t.name}:${t.count}`,
    read: async (req, query) => await ctx.store.posts.tags(query as never as Parameters<Store['posts']['tags']>[0] & { filter: TagsQuery }, req.principal),
  }))
}

const RenderBodySchema = Type.Object({
  content: Type.String({ maxLength: CONTENT_MAX, description: 'Markdown, as a post\'s `content`.' }),
}, { additionalProperties: false })

const RenderedSchema = Type.Object({
  html: Type.String({ maxLength: 20 * CONTENT_MAX, description: 'The HTML a post with this content holds as `content_html`.' }),
}, { additionalProperties: false })

/**
 * `POST /render`: Markdown to HTML by the renderer posts are stored with, so an editor's preview is
 * byte for byte what is published. Any valid credential; nothing is stored.
 */
export async function renderRoutes (app: FastifyInstance, ctx: RouteContext, images?: (content: string) => Promise<ContentImages>): Promise<void> {
  app.post<{ Body: Static<typeof RenderBodySchema> }>('/render', ctx.route({
    config: { requiresCredential: true },
    schema: {
      tags: ['posts'],
      summary: 'Render Markdown as a post\'s HTML',
      description: 'Any valid credential. `{content}` → `{html}`, exactly as a post holding that content shows `content_html` (raw HTML escaped, links with other schemes than http, https and mailto dropped). Nothing is stored.',
      body: RenderBodySchema,
      response: { 200: RenderedSchema, ...problemResponses(...COMMON_ERRORS, 403, 413, 415, 422) },
    },
  }), async (req, reply) => {
    reply.header('cache-control', 'private, no-store')
    // The service's own images in it get their variants, as in a stored post's HTML.
    return { html: renderContent(req.body.content, images === undefined ? undefined : await images(req.body.content)).html }
  })
}
