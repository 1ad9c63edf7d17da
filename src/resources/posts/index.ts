import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter } from 'prom-client'
import { PublishScheduler } from './jobs/publish-scheduler.ts'
import { normalisePostInput, POST_SORT_KEYS, type Post, type PostSortKey, type PostSummary } from './post.ts'
import { PostService } from './post-service.ts'
import { may, type Principal } from '../../domain/principal.ts'
import { fieldError, validationFailed } from '../../errors.ts'
import { message } from '../../messages.ts'
import { preconditionOf, sendResource } from '../../http/toolkit/conditional.ts'
import { PATCH_TYPES } from '../../http/pipeline/content-type.ts'
import { applyPatch, type Json, patchBodySchema } from '../../http/toolkit/patch.ts'
import { listHandler } from '../../http/toolkit/collection.ts'
import type { CollectionSpec } from '../../http/toolkit/paging.ts'
import type { PartContext, Resource, RouteContext } from '../../http/contract/resources.ts'
import type { Job } from '../../jobs/job.ts'
import { postsProblems, postsFieldCodes } from './problems.ts'
import { postsStore, previewLinksStore, revisionsStore } from './store-module.ts'
import { aliasesStore } from './aliases.ts'
import { postsInterop } from './interop/interop.ts'
import { toFieldErrors } from '../../http/protocol/validation.ts'
import type { ListQuery, UnitOfWork } from '../../store/store.ts'
import { contentImages } from './content-images.ts'
import type { PostFilter } from './store.ts'
import { linkBase } from '../../http/protocol/versioning.ts'
import { cacheControlFor } from '../../http/pipeline/caching.ts'
import { renderRoutes, TagListItemSchema, TagSchema, tagRoutes } from './content-routes.ts'
import { feedRoutes, sitemapRoutes } from './feeds/routes.ts'
import { parseTagFilter } from './tags.ts'
import { postSortValue } from './posts-repository.ts'
import { answerDelete, answerWrite, writtenResource } from '../../http/toolkit/write.ts'
import { COMMON_ERRORS, NoContentSchema, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import { POST_EVENT_TYPES, postEvents } from './events.ts'
import { postData, renderPost } from './representation.ts'
import { articleServices } from './published.ts'
import { revisionRoutes } from './revisions/revisions.ts'
import { PREVIEW_LINK_SCHEMAS, previewLinkRoutes } from './preview-links/preview-links.ts'
import { previewLinksProblems } from './preview-links/problems.ts'
import { editorialSettings } from './settings.ts'
import { searchCatchUp, searchIndexer } from './jobs/search-indexer.ts'
import { FIELD_NAMES, ListPostsQuerySchema, type PostBody, PostIdParamsSchema, type PostIdParams, PostSlugParamsSchema, type PostSlugParams, POST_SCHEMAS, POST_VERSIONS } from './schemas.ts'

/** The list's filter as the query gave it: `tag` a comma list, read into keys for the store. */
type PostQueryFilter = Omit<PostFilter, 'tag'> & { tag?: string }

function storeFilter (filter: PostQueryFilter): PostFilter {
  return filter.tag === undefined ? filter as PostFilter : { ...filter, tag: parseTagFilter(filter.tag) }
}

/** Lists show the content and its HTML only when `fields` asks for them: they are most of a row's bytes. */
const FULL_FIELDS = ['content', 'content_html']

export const postsCollection: CollectionSpec<PostSortKey> = {
  name: 'posts',
  sortKeys: POST_SORT_KEYS,
  defaultSort: '-created_at',
  includes: [],
}

const WRITE = { requiredScope: 'posts:write' } as const

/** Post rows. Handlers are thin: cross-cutting work happens in src/http. */
async function postRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, cursors } = ctx
  const v = POST_VERSIONS[version]
  const serviceOptions = { revisionsKeep: ctx.config.editorial.revisionsKeep, clock: ctx.clock }
  const reader = new PostService(ctx.store, { ...serviceOptions, searchCurrent: searchCatchUp(ctx.store) })
  // Images of the service in a content are rendered with their variants: the resource that keeps them says what they are.
  const catalogue = ctx.resources.find(r => r.images !== undefined)?.images
  const images = catalogue === undefined ? undefined : contentImages(catalogue, ctx.config)
  const bylines = ctx.resources.find(r => r.bylines !== undefined)?.bylines
  const writer = (uow: UnitOfWork) => new PostService(uow, {
    ...serviceOptions,
    ...(bylines === undefined ? {} : { bylines: async (slugs: readonly string[]) => await bylines.find(uow, slugs) }),
    changed: postEvents(uow.events),
    ...(images === undefined ? {} : { images: async (content: string) => await images(uow, content) }),
    ...(catalogue === undefined ? {} : { featureImage: async (id: string) => (await catalogue.find(uow, [id], ctx.config)).get(id) ?? null }),
  })
  const validateBody = ctx.bodies.getSchema(v.body.$id!)!
  const tags = ['posts']
  const PostRef = Type.Ref(v.post)
  const BodyRef = Type.Ref(v.body)

  const written = (req: FastifyRequest, post: Post, status: 200 | 201) => writtenResource(req, 'posts', post, renderPost(post, version, linkBase(req)), status)

  app.get('/posts', ctx.route({
    config: { publicCache: true },
    schema: {
      tags,
      summary: 'List posts',
      description: 'Newest first by default. Paging links travel in the `Link` header; the body is a bare array. Drafts and archived posts appear only to their author and admins.',
      querystring: ListPostsQuerySchema,
      response: { 200: Type.Array(Type.Ref(v.item)), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 422) },
    },
  }), listHandler(cursors, {
    collection: postsCollection,
    fieldNames: FIELD_NAMES[version],
    defaultFields: () => [v.idName, 'title'],
    data: (p: PostSummary & { content?: string, contentHtml?: string }) => postData(p, version),
    // List items of version 1 are `{id, title}` alone.
    selfLink: version === 2,
    audience: 'public',
    sortValue: (p, term) => postSortValue(p, term.key, term.direction),
    read: async (req, q: ListQuery<PostSortKey, PostQueryFilter>, lr) => {
      const query = { ...q, filter: storeFilter(q.filter) }
      return lr.fields?.some(f => FULL_FIELDS.includes(f)) === true
        ? await reader.list(query, req.principal)
        : await reader.listSummaries(query, req.principal)
    },
  }))

  app.get<{ Params: PostIdParams }>('/posts/:post_id', ctx.route({
    config: { publicCache: true },
    schema: {
      tags,
      summary: 'Read a post',
      params: PostIdParamsSchema,
      response: { 200: PostRef, 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 404, 422) },
    },
  }), async (req, reply) => {
    const post = await reader.get(req.params.post_id, req.principal)
    return sendResource(req, reply, 'posts', post, renderPost(post, version, linkBase(req)), post.status === 'published' ? 'public' : 'private')
  })

  app.get<{ Params: PostSlugParams }>('/posts/by-slug/:slug', ctx.route({
    config: { publicCache: true },
    schema: {
      tags,
      summary: 'Read a post by its slug',
      description: 'The same representation and rules as `GET /posts/{post_id}`. An old slug of a renamed post answers 301 with `Location: /posts/by-slug/{current}`.',
      params: PostSlugParamsSchema,
      response: {
        200: PostRef,
        301: Type.Null({ description: 'An old slug: `Location` names the current one.' }),
        304: NotModifiedSchema,
        ...problemResponses(...COMMON_ERRORS, 404, 422),
      },
    },
  }), async (req, reply) => {
    const found = await reader.getBySlug(req.params.slug, req.principal)
    if ('movedTo' in found) {
      return reply.code(301).header('location', `${linkBase(req)}/posts/by-slug/${found.movedTo}`).header('cache-control', cacheControlFor(req, 'public')).send()
    }
    const post = found.post
    return sendResource(req, reply, 'posts', post, renderPost(post, version, linkBase(req)), post.status === 'published' ? 'public' : 'private')
  })

  await tagRoutes(app, ctx)
  await renderRoutes(app, ctx, images === undefined ? undefined : async content => await images(ctx.store, content))

  app.post<{ Body: PostBody }>('/posts', ctx.route({
    config: WRITE,
    schema: {
      tags,
      summary: 'Create a post',
      description: 'Needs the `posts:write` scope. `Prefer: return=minimal` answers 201 with `Location` and no body. An `Idempotency-Key` makes a retry safe.',
      body: BodyRef,
      response: { 201: PostRef, ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) },
    },
  }), async (req, reply) => {
    if (req.body[v.idName] !== undefined) {
      throw validationFailed([fieldError(v.idName, 'READ_ONLY', message('ID_ASSIGNED'))])
    }
    // A person whose role may not publish (a contributor) writes a draft when no status is given.
    const input = normalisePostInput(req.body.status === undefined && !may(req.principal, 'posts.publish') ? { ...req.body, status: 'draft' } : req.body)
    return await answerWrite(ctx.store, req, reply, async uow => {
      return written(req, await writer(uow).create(input, req.principal as Principal), 201)
    })
  })

  app.put<{ Params: PostIdParams, Body: PostBody }>('/posts/:post_id', ctx.route({
    config: WRITE,
    schema: {
      tags,
      summary: 'Replace a post',
      description: 'Complete replacement; `status` defaults to `published`. Only the author or an admin. `If-Match` makes it conditional (412 when stale). `Prefer: return=minimal` answers 204.',
      params: PostIdParamsSchema,
      body: BodyRef,
      response: { 200: PostRef, 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const id = req.params.post_id
    const sentId = req.body[v.idName]
    if (sentId !== undefined && sentId !== id) {
      throw validationFailed([fieldError(v.idName, 'ID_MISMATCH', message('ID_MISMATCH', { sent: sentId, path: id }))])
    }
    const input = normalisePostInput(req.body)
    return await answerWrite(ctx.store, req, reply, async uow => {
      return written(req, await writer(uow).update(id, req.principal as Principal, () => input, preconditionOf(req, 'posts')), 200)
    })
  })

  app.patch<{ Params: PostIdParams, Body: unknown }>('/posts/:post_id', ctx.route({
    config: { ...WRITE, bodyTypes: PATCH_TYPES, acceptPatch: PATCH_TYPES },
    schema: {
      tags,
      summary: 'Change part of a post',
      description: 'Body `application/merge-patch+json` (RFC 7396) or `application/json-patch+json` (RFC 6902), applied to the post as GET shows it; the result is validated like a PUT body. Any other type: 415 with `Accept-Patch`. A failed JSON Patch `test`: 409 PATCH_TEST_FAILED; an operation that cannot apply: 422 INVALID_PATCH; changing a read-only member: 422 READ_ONLY.',
      params: PostIdParamsSchema,
      body: patchBodySchema,
      response: { 200: PostRef, 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const id = req.params.post_id
    const base = linkBase(req)
    const patched = (current: Post) => {
      const before = renderPost(current, version, base) as Record<string, Json>
      const after = applyPatch(req.headers['content-type'], before, req.body as Json)
      if (typeof after !== 'object' || after === null || Array.isArray(after)) {
        throw validationFailed([fieldError('', 'INVALID_TYPE', message('TYPE', { types: ['object'] }))])
      }
      const errors = v.readOnly
        .filter(k => JSON.stringify(after[k]) !== JSON.stringify(before[k]))
        .map(k => fieldError(k, 'READ_ONLY', message('SERVICE_SET')))
      if (!validateBody(after)) errors.push(...toFieldErrors(validateBody.errors ?? [], 'body'))
      if (errors.length > 0) throw validationFailed(errors)
      return normalisePostInput(after as unknown as PostBody)
    }
    return await answerWrite(ctx.store, req, reply, async uow => {
      return written(req, await writer(uow).update(id, req.principal as Principal, patched, preconditionOf(req, 'posts')), 200)
    })
  })

  app.delete<{ Params: PostIdParams }>('/posts/:post_id', ctx.route({
    config: WRITE,
    schema: {
      tags,
      summary: 'Delete a post',
      description: 'Only the author or an admin. `If-Match` makes it conditional (412 when stale).',
      params: PostIdParamsSchema,
      response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 422) },
    },
  }), async (req, reply: FastifyReply) => {
    return await answerDelete(ctx.store, req, reply, async uow => {
      await writer(uow).delete(req.params.post_id, req.principal as Principal, preconditionOf(req, 'posts'))
    })
  })

  await revisionRoutes(app, ctx, { reader, writer, written })
  await previewLinkRoutes(app, ctx, reader)
}

/** The scheduled switch, run by every instance of background work; and on SQLite the search index's feed. */
function postJobs ({ config, store, log, metrics, clock }: PartContext): Job[] {
  const published = new Counter({ name: 'scheduled_posts_published_total', help: 'Scheduled posts this instance published at their publish_at', registers: [metrics] })
  const scheduler = new PublishScheduler({
    store,
    log: log.child({ job: 'schedule' }),
    revisionsKeep: config.editorial.revisionsKeep,
    rescanMs: config.editorial.scheduleRescanMs,
    published,
    changed: uow => postEvents(uow.events),
    clock,
  })
  // PostgreSQL's index is kept by each write: there is nothing to feed.
  return store.kind === 'sqlite' ? [scheduler, searchIndexer(store)] : [scheduler]
}

export const postsResource: Resource = {
  name: 'posts',
  // A post's feature image may not be deleted while the post holds it.
  imageHolder: { holds: async (store, id) => await store.posts.holdsImage(id) },
  // Its posts list users as their authors.
  authorship: {
    holds: async (store, userId) => await store.posts.authorHolds(userId),
    reassign: async (uow, from, to) => { await uow.posts.reassignAuthor(from, to) },
    renamed: async (uow, user) => { await uow.posts.renameAuthor(user) },
    publishedCounts: async (store, userIds) => await store.posts.publishedAuthorCounts(userIds),
  },
  description: 'Blog posts',
  path: '/posts',
  problems: { ...previewLinksProblems, ...postsProblems },
  fieldCodes: postsFieldCodes,
  schemas: [...POST_SCHEMAS, TagSchema, TagListItemSchema, ...PREVIEW_LINK_SCHEMAS],
  eventTypes: POST_EVENT_TYPES,
  routes: postRoutes,
  jobs: postJobs,
  services: articleServices,
  settings: editorialSettings,
  store: [postsStore, revisionsStore, previewLinksStore, aliasesStore],
  unversionedRoutes: async (app, ctx) => {
    await feedRoutes(app, ctx)
    await sitemapRoutes(app, ctx)
  },
  unversionedPaths: ['/feed.atom', '/feed.json', '/sitemap.xml', '/sitemap-posts-*'],
  links: { tags: '/tags', feed_atom: '/feed.atom', feed_json: '/feed.json', sitemap: '/sitemap.xml' },
  scopes: [WRITE.requiredScope],
  exportable: {
    list: async (store, query, viewer) => await store.posts.list(query as ListQuery<PostSortKey, PostFilter>, viewer),
    render: (post, version, base) => renderPost(post as Post, version, base),
  },
  interop: postsInterop,
}
