import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Post } from '../post.ts'
import type { PostService } from '../post-service.ts'
import type { Principal } from '../../../domain/principal.ts'
import { REVISION_SORT_KEYS, type RevisionSummary } from './revision.ts'
import { preconditionOf, sendResource } from '../../../http/toolkit/conditional.ts'
import { listHandler } from '../../../http/toolkit/collection.ts'
import type { CollectionSpec } from '../../../http/toolkit/paging.ts'
import type { RouteContext } from '../../../http/contract/resources.ts'
import type { UnitOfWork } from '../../../store/store.ts'
import { answerWrite, type Written } from '../../../http/toolkit/write.ts'
import { COMMON_ERRORS, EmptyBodySchema, NotModifiedSchema, problemResponses } from '../../../http/contract/schemas.ts'
import { renderRevision, revisionData } from '../representation.ts'
import { ListRevisionsQuerySchema, PostIdParamsSchema, type PostIdParams, POST_VERSIONS, REVISION_FIELD_NAMES, RevisionListItemSchema, RevisionNumberParamsSchema, type RevisionNumberParams, RevisionSchema } from '../schemas.ts'

export const revisionsCollection: CollectionSpec<typeof REVISION_SORT_KEYS[number]> = {
  name: 'revisions',
  sortKeys: REVISION_SORT_KEYS,
  defaultSort: '-number',
  includes: [],
}

/** What the revision routes share with the post routes they sit under. */
export interface PostRouteParts {
  readonly reader: PostService
  readonly writer: (uow: UnitOfWork) => PostService
  readonly written: (req: FastifyRequest, post: Post, status: 200 | 201) => Written
}

// A revision never changes; what tells two apart is the post and the number (and when it was made,
// so that a database reset that reuses numbers gives new tags).
const validated = (r: RevisionSummary) => ({ id: r.number, revision: r.number, updatedAt: r.createdAt })

/** Revisions: list, read and restore, for the post's author and admins only. */
export async function revisionRoutes (app: FastifyInstance, ctx: RouteContext, { reader, writer, written }: PostRouteParts): Promise<void> {
  const v = POST_VERSIONS[ctx.version]
  const tags = ['posts']
  const hidden = 'Only the post\'s author and admins see its revisions; to anyone else they do not exist (404).'

  app.get<{ Params: PostIdParams }>('/posts/:post_id/revisions', ctx.route({
    schema: {
      tags,
      summary: 'List a post\'s revisions',
      description: `Newest first. One revision per change of the post (create, PUT, PATCH, restore, the scheduled switch); only the newest REVISIONS_KEEP are kept. Paged like every list. ${hidden}`,
      params: PostIdParamsSchema,
      querystring: ListRevisionsQuerySchema,
      response: { 200: Type.Array(Type.Ref(RevisionListItemSchema)), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 404, 422) },
    },
  }), listHandler<RevisionSummary & { id: number, revision: number, updatedAt: string }, 'number', Record<string, never>>(ctx.cursors, {
    collection: revisionsCollection,
    fieldNames: REVISION_FIELD_NAMES,
    defaultFields: () => ['number', 'title', 'status', 'editor', 'created_at'],
    data: r => revisionData(r),
    selfLink: false,
    audience: 'private',
    read: async (req, query) => {
      const page = await reader.revisions((req.params as PostIdParams).post_id, req.principal, query)
      return { ...page, items: page.items.map(r => ({ ...r, ...validated(r) })) }
    },
  }))

  app.get<{ Params: RevisionNumberParams }>('/posts/:post_id/revisions/:number', ctx.route({
    schema: {
      tags,
      summary: 'Read a revision',
      description: `The post's values after that change. Strong ETag: a revision never changes. Pruned or never made: 404 REVISION_NOT_FOUND. ${hidden}`,
      params: RevisionNumberParamsSchema,
      response: { 200: Type.Ref(RevisionSchema), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 404, 422) },
    },
  }), async (req, reply) => {
    const { post_id: id, number } = req.params
    const revision = await reader.revision(id, number, req.principal)
    return sendResource(req, reply, `posts/${id}/revisions`, validated(revision), renderRevision(revision), 'private')
  })

  app.post<{ Params: RevisionNumberParams }>('/posts/:post_id/revisions/:number/restore', ctx.route({
    config: { requiredScope: 'posts:write', optionalBody: true },
    schema: {
      tags,
      summary: 'Restore a revision',
      description: 'The post takes that revision\'s title, content, status and publish_at, as a PUT of them would (a new revision is recorded). No body, or `{}`. `If-Match` / `If-Unmodified-Since` are checked against the post (412 when stale); an `Idempotency-Key` makes a retry safe. A scheduled revision whose publish_at has passed cannot be restored as it is: 422 PUBLISH_AT_IN_PAST. ' + hidden,
      params: RevisionNumberParamsSchema,
      body: EmptyBodySchema,
      response: { 200: Type.Ref(v.post), 204: Type.Null(), ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 413, 415, 422) },
    },
  }), async (req, reply) => {
    const { post_id: id, number } = req.params
    return await answerWrite(ctx.store, req, reply, async uow => {
      return written(req, await writer(uow).restore(id, number, req.principal as Principal, preconditionOf(req, 'posts')), 200)
    })
  })
}
