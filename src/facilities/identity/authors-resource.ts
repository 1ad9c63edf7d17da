import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from '../../errors.ts'
import type { Resource, RouteContext } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import { cacheControlFor } from '../../http/pipeline/caching.ts'
import { listHandler } from '../../http/toolkit/collection.ts'
import { sendRepresentation, weakEtag } from '../../http/toolkit/conditional.ts'
import { linkBase } from '../../http/protocol/versioning.ts'
import type { ListPage, ListQuery } from '../../store/store.ts'
import { AUTHORS, AuthorSchema, ListAuthorsQuerySchema } from './schemas.ts'
import type { UserRecord } from './store.ts'

const tags = ['authors']

const AUTHOR_FIELDS = ['slug', 'name', 'bio', 'website', 'avatar', 'post_count', '_links'] as const

/** A user with a published post, as the public sees them: no email, role or status. */
type Author = UserRecord & { readonly postCount: number, readonly avatarFacts: unknown }

const SlugParamsSchema = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 200, description: 'The author\'s slug, now or before a rename (then 301).' }) }, { additionalProperties: false })

/** The public pages of the people who write: every user with at least one published post. */
async function authorRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { store } = ctx
  const authorship = () => ctx.resources.find(r => r.authorship !== undefined)?.authorship
  const images = ctx.resources.find(r => r.images !== undefined)?.images

  const authorsOf = async (users: readonly UserRecord[], counts: ReadonlyMap<string, number>): Promise<Author[]> => {
    const avatars = users.flatMap(u => u.avatar === null ? [] : [u.avatar])
    const facts = images === undefined || avatars.length === 0 ? new Map<string, unknown>() : await images.find(store, avatars, ctx.config)
    return users.map(u => ({ ...u, postCount: counts.get(u.id) ?? 0, avatarFacts: u.avatar === null ? null : facts.get(u.avatar) ?? null }))
  }
  const data = (req: FastifyRequest, a: Author): Record<string, unknown> => {
    const base = linkBase(req)
    return {
      slug: a.slug,
      name: a.name,
      bio: a.bio,
      website: a.website,
      avatar: a.avatarFacts,
      post_count: a.postCount,
      _links: { self: { href: `${base}/authors/${a.slug}` }, posts: { href: `${base}/posts?author=${a.slug}` } },
    }
  }

  app.get('/authors', ctx.route({
    config: { publicCache: true },
    schema: { tags, summary: 'List authors', description: 'Public: every user with at least one published post, by name. No email, role or status.', querystring: ListAuthorsQuerySchema, response: { 200: Type.Array(Type.Ref(AuthorSchema)), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 422) } },
  }), async (req, reply) => await listHandler(ctx.cursors, {
    collection: AUTHORS,
    fieldNames: AUTHOR_FIELDS,
    defaultFields: () => AUTHOR_FIELDS,
    data: (a: Author) => data(req, a),
    selfLink: false,
    audience: 'public',
    version: (a: Author) => `${a.id}:${a.revision}:${a.postCount}:${JSON.stringify(a.avatarFacts)}`,
    read: async (_req, query: ListQuery<'name', Record<string, never>>): Promise<ListPage<Author>> => {
      const counts = await authorship()?.publishedCounts(store) ?? new Map<string, number>()
      const page = await store.identity.listUsers({ ...query, filter: { ids: [...counts.keys()] } })
      return { ...page, items: await authorsOf(page.items, counts) }
    },
  })(req, reply))

  app.get<{ Params: { slug: string } }>('/authors/:slug', ctx.route({
    config: { publicCache: true },
    schema: { tags, summary: 'Read an author', description: 'Public. A former slug answers 301 to the current one; a user without a published post: 404 `AUTHOR_NOT_FOUND`.', params: SlugParamsSchema, response: { 200: Type.Ref(AuthorSchema), 301: Type.Null({ description: 'Moved: `Location` is the author\'s current page.' }), 304: NotModifiedSchema, ...problemResponses(...COMMON_ERRORS, 404, 422) } },
  }), async (req, reply) => {
    const { slug } = req.params
    const user = await store.identity.userBySlug(slug)
    const notFound = () => new AppError('AUTHOR_NOT_FOUND', `No author has the slug "${slug}" and a published post.`)
    if (user === null) {
      const moved = await store.identity.userByAlias(slug)
      if (moved === null) throw notFound()
      return reply.code(301).header('location', `${linkBase(req)}/authors/${moved.slug}`).header('cache-control', cacheControlFor(req, 'public')).send()
    }
    const counts = await authorship()?.publishedCounts(store, [user.id]) ?? new Map<string, number>()
    if ((counts.get(user.id) ?? 0) === 0) throw notFound()
    const [author] = await authorsOf([user], counts)
    const body = data(req, author!)
    return sendRepresentation(req, reply, body, { etag: weakEtag(JSON.stringify(body)), audience: 'public' })
  })
}

/** The authors' pages: people's public side (their profiles with their published posts). */
export const authorsResource: Resource = {
  name: 'authors',
  description: 'The people who write: every user with a published post, public',
  path: '/authors',
  schemas: [],
  routes: authorRoutes,
}
