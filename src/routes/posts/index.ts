import { Type } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { normalisePostInput, POST_SORT_KEYS, type Post, type PostSortKey, postSortValues } from '../../domain/post.ts'
import type { PostService } from '../../domain/post-service.ts'
import type { Principal } from '../../domain/principal.ts'
import { fieldError, validationFailed } from '../../errors.ts'
import { hasPrecondition, preconditionHolds, sendRepresentation } from '../../http/conditional.ts'
import { PRIVATE_CACHE } from '../../http/caching.ts'
import { PATCH_TYPES } from '../../http/content-type.ts'
import { applyPatch, type Json, patchBodySchema } from '../../http/patch.ts'
import { toFieldErrors } from '../../http/validation.ts'
import { type CollectionSpec, type CursorCodec, parseListRequest, setPagingHeaders, storeQueryOf } from '../../http/paging.ts'
import { applied, prefers } from '../../http/prefer.ts'
import { type ApiVersion, vendorMediaType } from '../../http/versioning.ts'
import { COMMON_ERRORS, NoContentSchema, NotModifiedSchema, problemResponses } from '../shared/schemas.ts'
import { linkBase, postEtag, postListEtag, renderListItem, renderPost } from './representation.ts'
import {
  FIELD_NAMES, ListPostsQuerySchema, type ListPostsQuery, type PostBody, PostBodyV1Schema, PostBodyV2Schema,
  PostIdParamsSchema, type PostIdParams, PostListItemV1Schema, PostListItemV2Schema, PostV1Schema, PostV2Schema,
} from './schemas.ts'

const READ_ONLY = { 1: ['id', 'created_at', 'updated_at', 'author'], 2: ['postId', 'created_at', 'updated_at', 'author', '_links'] } as const

export const postsCollection: CollectionSpec<PostSortKey> = {
  name: 'posts',
  sortKeys: POST_SORT_KEYS,
  defaultSort: '-created_at',
  includes: [],
}

export interface PostRoutesOptions {
  version: ApiVersion
  /** Validates a whole post body of this version (the result of a PATCH is checked like a PUT body). */
  validateBody: ValidateFunction
  /** Only one registration per path appears in the OpenAPI document. */
  documented: boolean
  posts: PostService
  cursors: CursorCodec
}

/** Contract §2, post rows. Handlers are thin: cross-cutting work happens in src/http. */
export async function postRoutes (app: FastifyInstance, opts: PostRoutesOptions): Promise<void> {
  const { version, posts, cursors, validateBody } = opts
  const idName = version === 1 ? 'id' : 'postId'
  const tags = ['posts']
  const hide = !opts.documented
  const config = { apiVersion: version }
  const constraints = { apiVersion: String(version) }
  const produces = ['application/json', vendorMediaType(version)]
  const PostRef = Type.Ref(version === 1 ? PostV1Schema : PostV2Schema)
  const ItemRef = Type.Ref(version === 1 ? PostListItemV1Schema : PostListItemV2Schema)
  const BodyRef = Type.Ref(version === 1 ? PostBodyV1Schema : PostBodyV2Schema)

  function sendPost (req: FastifyRequest, reply: FastifyReply, post: Post, status = 200) {
    return sendRepresentation(req, reply, renderPost(post, version, linkBase(req)), {
      etag: postEtag(post, version, linkBase(req)),
      lastModified: new Date(post.updatedAt),
      audience: post.status === 'published' ? 'public' : 'private',
      status,
    })
  }

  function precondition (req: FastifyRequest) {
    if (!hasPrecondition(req)) return undefined
    return (current: Post) => preconditionHolds(req, { etag: postEtag(current, version, linkBase(req)), lastModified: new Date(current.updatedAt) })
  }

  app.get<{ Querystring: ListPostsQuery }>('/posts', {
    constraints,
    config,
    schema: {
      hide,
      produces,
      tags,
      summary: 'List posts',
      description: 'Newest first by default. Paging links travel in the `Link` header; the body is a bare array. Drafts and archived posts appear only to their author and admins.',
      querystring: ListPostsQuerySchema,
      response: { 200: Type.Array(ItemRef), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 422) },
    },
  }, async (req, reply) => {
    const { status, q, ...paging } = req.query
    const filter = { ...(status !== undefined ? { status } : {}), ...(q !== undefined ? { q } : {}) }
    const lr = parseListRequest(req, paging, postsCollection, filter, FIELD_NAMES[version], cursors)
    const page = await posts.list(storeQueryOf(lr, filter), req.principal)
    const base = linkBase(req)
    const items = page.items.map(p => renderListItem(p, version, base, lr.fields))
    setPagingHeaders(req, reply, lr, page, p => postSortValues(p, lr.sort), cursors)
    return sendRepresentation(req, reply, items, {
      etag: postListEtag(page.items, version, base, lr.fields, [reply.getHeader('link'), reply.getHeader('x-total-count')]),
      audience: 'public',
    })
  })

  app.get<{ Params: PostIdParams }>('/posts/:post_id', {
    constraints,
    config,
    schema: {
      hide,
      produces,
      tags,
      summary: 'Read a post',
      params: PostIdParamsSchema,
      response: { 200: PostRef, 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 404, 422) },
    },
  }, async (req, reply) => {
    return sendPost(req, reply, await posts.get(req.params.post_id, req.principal))
  })

  app.post<{ Body: PostBody }>('/posts', {
    constraints,
    config: { ...config, requiredScope: 'posts:write' },
    schema: {
      hide,
      produces,
      tags,
      summary: 'Create a post',
      description: 'Needs the `posts:write` scope. `Prefer: return=minimal` answers 201 with `Location` and no body.',
      body: BodyRef,
      response: { 201: PostRef, ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) },
    },
  }, async (req, reply) => {
    if (req.body[idName] !== undefined) {
      throw validationFailed([fieldError(idName, 'READ_ONLY', 'The id of a new post is assigned by the service; leave it out.')])
    }
    const post = await posts.create(normalisePostInput(req.body), req.principal as Principal, req.abandoned)
    reply.header('location', `${linkBase(req)}/posts/${post.id}`)
    if (prefers(req, 'return', 'minimal')) {
      applied(reply, 'return=minimal')
      return reply.code(201).header('cache-control', PRIVATE_CACHE).header('etag', postEtag(post, version, linkBase(req))).send()
    }
    if (prefers(req, 'return', 'representation')) applied(reply, 'return=representation')
    return sendPost(req, reply, post, 201)
  })

  app.put<{ Params: PostIdParams, Body: PostBody }>('/posts/:post_id', {
    constraints,
    config: { ...config, requiredScope: 'posts:write' },
    schema: {
      hide,
      produces,
      tags,
      summary: 'Replace a post',
      description: 'Complete replacement; `status` defaults to `published`. Only the author or an admin. `If-Match` makes it conditional (412 when stale). `Prefer: return=minimal` answers 204.',
      params: PostIdParamsSchema,
      body: BodyRef,
      response: { 200: PostRef, 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 413, 415, 422) },
    },
  }, async (req, reply) => {
    const id = req.params.post_id
    const sentId = req.body[idName]
    if (sentId !== undefined && sentId !== id) {
      throw validationFailed([fieldError(idName, 'ID_MISMATCH', `The body's ${idName} (${sentId}) differs from the path's (${id}).`)])
    }
    const input = normalisePostInput(req.body)
    const post = await posts.update(id, req.principal as Principal, () => input, precondition(req), req.abandoned)
    return sendWritten(req, reply, post)
  })

  app.patch<{ Params: PostIdParams, Body: unknown }>('/posts/:post_id', {
    constraints,
    config: { ...config, requiredScope: 'posts:write', bodyTypes: PATCH_TYPES, acceptPatch: PATCH_TYPES },
    schema: {
      hide,
      produces,
      tags,
      summary: 'Change part of a post',
      description: 'Body `application/merge-patch+json` (RFC 7396) or `application/json-patch+json` (RFC 6902), applied to the post as GET shows it; the result is validated like a PUT body. Any other type: 415 with `Accept-Patch`. A failed JSON Patch `test`: 409 PATCH_TEST_FAILED; an operation that cannot apply: 422 INVALID_PATCH; changing a read-only member: 422 READ_ONLY.',
      params: PostIdParamsSchema,
      body: patchBodySchema,
      response: { 200: PostRef, 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) },
    },
  }, async (req, reply) => {
    const id = req.params.post_id
    const base = linkBase(req)
    const post = await posts.update(id, req.principal as Principal, current => {
      const before = renderPost(current, version, base) as Record<string, Json>
      const after = applyPatch(req.headers['content-type'], before, req.body as Json)
      if (typeof after !== 'object' || after === null || Array.isArray(after)) {
        throw validationFailed([fieldError('', 'INVALID_TYPE', 'The patched post must be a JSON object.')])
      }
      const errors = READ_ONLY[version]
        .filter(k => JSON.stringify(after[k]) !== JSON.stringify(before[k]))
        .map(k => fieldError(k, 'READ_ONLY', `"${k}" is set by the service; a patch cannot change it.`))
      if (!validateBody(after)) errors.push(...toFieldErrors(validateBody.errors ?? [], 'body'))
      if (errors.length > 0) throw validationFailed(errors)
      return normalisePostInput(after as unknown as PostBody)
    }, precondition(req), req.abandoned)
    return sendWritten(req, reply, post)
  })

  app.delete<{ Params: PostIdParams }>('/posts/:post_id', {
    constraints,
    config: { ...config, requiredScope: 'posts:write' },
    schema: {
      hide,
      produces,
      tags,
      summary: 'Delete a post',
      description: 'Only the author or an admin. `If-Match` makes it conditional (412 when stale).',
      params: PostIdParamsSchema,
      response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 422) },
    },
  }, async (req, reply) => {
    await posts.delete(req.params.post_id, req.principal as Principal, precondition(req), req.abandoned)
    return reply.code(204).header('cache-control', PRIVATE_CACHE).send()
  })

  /** After PUT or PATCH: the post, or 204 when `Prefer: return=minimal`. */
  function sendWritten (req: FastifyRequest, reply: FastifyReply, post: Post) {
    if (prefers(req, 'return', 'representation')) applied(reply, 'return=representation')
    if (prefers(req, 'return', 'minimal')) {
      applied(reply, 'return=minimal')
      return reply.code(204).header('cache-control', PRIVATE_CACHE).header('etag', postEtag(post, version, linkBase(req))).header('last-modified', new Date(post.updatedAt).toUTCString()).send()
    }
    return sendPost(req, reply, post)
  }
}
