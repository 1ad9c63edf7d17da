import { Readable } from 'node:stream'
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../../config.ts'
import { AppError } from '../../../errors.ts'
import type { Post } from '../post.ts'
import { sendRepresentation, strongEtag } from '../../../http/toolkit/conditional.ts'
import type { Resource } from '../../../http/contract/resources.ts'
import type { Store } from '../../../store/store.ts'
import { NotModifiedSchema, problemResponses, SYSTEM_ERRORS } from '../../../http/contract/schemas.ts'
import type { PublishedPost, PublishedStats } from '../store.ts'
import { SITEMAP_MEDIA_TYPE, sitemapIndex, urlset } from './sitemap.ts'
import { ATOM_MEDIA_TYPE, atomFeed, type FeedAuthor, type FeedEntry, feedUpdated, JSON_FEED_MEDIA_TYPE, jsonFeed } from './feeds.ts'
import { parseTagFilter } from '../tags.ts'
import { CONTENT_MAX, EXCERPT_MAX, TAG_MAX, TAGS_MAX, TITLE_MAX } from '../limits.ts'
import { AUTHORS_MAX } from '../schemas.ts'
import { publicUrls } from './public-urls.ts'

const FeedQuerySchema = Type.Object({
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: TAG_MAX * 4, pattern: '\\S', description: 'The feed of this tag only (case-insensitive).' })),
}, { additionalProperties: false })
type FeedQuery = Static<typeof FeedQuerySchema>

const Text = (maxLength: number, format?: string) => Type.String({ maxLength, ...(format === undefined ? {} : { format }) })
const URL_MAX = 2300
const JsonFeedSchema = Type.Object({
  version: Type.Literal('https://jsonfeed.org/version/1.1'),
  title: Text(200),
  home_page_url: Text(URL_MAX, 'uri'),
  feed_url: Text(URL_MAX, 'uri'),
  language: Type.Literal('en'),
  items: Type.Array(Type.Object({
    id: Text(URL_MAX, 'uri'),
    url: Text(URL_MAX, 'uri'),
    external_url: Type.Optional(Text(URL_MAX, 'uri')),
    title: Text(TITLE_MAX),
    content_html: Text(20 * CONTENT_MAX),
    summary: Text(EXCERPT_MAX),
    date_published: Text(30, 'date-time'),
    date_modified: Text(30, 'date-time'),
    authors: Type.Array(Type.Object({ name: Text(8192), url: Type.Optional(Text(URL_MAX, 'uri')) }, { additionalProperties: false }), { maxItems: AUTHORS_MAX }),
    tags: Type.Array(Text(TAG_MAX), { maxItems: TAGS_MAX }),
    image: Type.Optional(Text(URL_MAX, 'uri')),
  }, { additionalProperties: false }), { maxItems: 20 }),
}, { additionalProperties: false, description: 'JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/).' })

/** How many posts a feed holds. */
export const FEED_SIZE = 20

function entryOf (p: Post, authors: readonly FeedAuthor[]): FeedEntry {
  return { id: p.id, slug: p.slug, title: p.title, authors, tags: p.tags, excerpt: p.excerpt, contentHtml: p.contentHtml, publishedAt: p.publishedAt!, updatedAt: p.updatedAt, canonicalUrl: p.canonicalUrl, image: p.featureImage?.url ?? null }
}

/**
 * `GET /feed.atom` and `GET /feed.json`: the 20 most recently published public posts,
 * the same for every caller and every version. A strong ETag over what decides the bytes (each
 * entry's revision, the base URL, the tag), Last-Modified from the newest entry, 304.
 */
export async function feedRoutes (app: FastifyInstance, ctx: { readonly config: Config, readonly store: Store, readonly resources?: readonly Resource[] }): Promise<void> {
  const base = ctx.config.publicBaseUrl
  const urls = publicUrls(ctx.config, base)
  const bylines = ctx.resources?.find(r => r.bylines !== undefined)?.bylines
  /** Each post's authors by name: its listed authors (their names now), else its credential's name. */
  const authorsOf = async (posts: readonly Post[]): Promise<FeedAuthor[][]> => {
    const slugs = [...new Set(posts.flatMap(p => p.authors))]
    const people = bylines === undefined || slugs.length === 0 ? new Map<string, { name: string }>() : await bylines.find(ctx.store, slugs)
    return posts.map(p => p.authors.length === 0
      ? [{ name: p.author }]
      : p.authors.map(s => ({ name: people.get(s)?.name ?? s, url: urls.author(s) })))
  }
  const feed = (format: 'atom' | 'json') => async (req: FastifyRequest<{ Querystring: FeedQuery }>, reply: FastifyReply) => {
    const tag = req.query.tag?.trim() ?? null
    const tags = tag === null ? [] : parseTagFilter(tag)
    const page = await ctx.store.posts.list({
      filter: tags.length > 0 ? { status: 'published', tag: tags } : { status: 'published' },
      sort: [{ key: 'published_at', direction: 'desc' }, { key: 'id', direction: 'desc' }],
      limit: FEED_SIZE,
    }, null)
    const authors = await authorsOf(page.items)
    const entries = page.items.map((p, i) => entryOf(p, authors[i]!))
    const selfUrl = `${base}/feed.${format}${tag === null ? '' : `?tag=${encodeURIComponent(tag)}`}`
    const meta = { baseUrl: base, urls, selfUrl, tag }
    const etag = strongEtag(`feed.${format}`, selfUrl, urls.home, ...page.items.map((p, i) => `${p.id}:${p.revision}:${p.updatedAt}:${JSON.stringify(authors[i])}`))
    const body = format === 'atom' ? atomFeed(entries, meta) : JSON.stringify(jsonFeed(entries, meta))
    return sendRepresentation(req, reply, body, {
      etag,
      lastModified: new Date(feedUpdated(entries)),
      audience: 'everyone',
      mediaType: format === 'atom' ? ATOM_MEDIA_TYPE : JSON_FEED_MEDIA_TYPE,
    })
  }
  const schema = (summary: string, mediaType: string, body: object) => ({
    tags: ['posts'],
    summary,
    description: 'The 20 most recently published posts (`published_at` descending), public only; `?tag=` for one tag. No credential needed; the same for every caller.',
    querystring: FeedQuerySchema,
    produces: [mediaType],
    response: { 200: { description: `The feed (${mediaType}).`, content: { [mediaType]: { schema: body } } }, 304: NotModifiedSchema, ...problemResponses(...SYSTEM_ERRORS, 406, 422) },
  })
  const config = { ignoresCredentials: true, publicCache: true }
  app.get<{ Querystring: FeedQuery }>('/feed.atom', { config, schema: schema('Atom feed of published posts', 'application/atom+xml', { type: 'string', description: 'Atom 1.0 (RFC 4287).' }) }, feed('atom'))
  app.get<{ Querystring: FeedQuery }>('/feed.json', { config, schema: schema('JSON Feed of published posts', 'application/feed+json', JsonFeedSchema) }, feed('json'))
}

/** Posts read from the store per page of a sitemap: memory holds one page however many posts there are. */
const SITEMAP_PAGE = 1000
const SITEMAP_CACHE = 'public, max-age=300'

const SitemapPartParamsSchema = Type.Object({
  n: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'The part\'s number, from 1.' }),
}, { additionalProperties: false })
type SitemapPartParams = Static<typeof SitemapPartParamsSchema>

/** The published posts from the one after `afterId` on, at most `max` of them, a keyset page at a time. */
async function * publishedPages (store: Store, afterId: number, max: number): AsyncGenerator<PublishedPost[]> {
  for (let left = max, after = afterId; left > 0;) {
    const page = await store.posts.published(after, Math.min(SITEMAP_PAGE, left))
    if (page.length === 0) return
    yield page
    left -= page.length
    after = page.at(-1)!.id
  }
}

/**
 * `GET /sitemap.xml` (sitemaps.org 0.9): every published post, streamed from keyset pages; past
 * SITEMAP_URLS_PER_FILE posts an index of `/sitemap-posts-{n}.xml` parts. The strong ETag is made
 * from what the store says cheaply about what decides the bytes: how many posts are published, the
 * newest `updated_at` among them and the sum of their ids (a publication or an edit moves the newest;
 * an unpublishing or a deletion the count and the sum), the base URL, the file size and the part.
 */
export async function sitemapRoutes (app: FastifyInstance, ctx: { readonly config: Config, readonly store: Store }): Promise<void> {
  const base = ctx.config.publicBaseUrl
  const urls = publicUrls(ctx.config, base)
  const perFile = ctx.config.editorial.sitemapUrlsPerFile
  const send = (req: FastifyRequest, reply: FastifyReply, stats: PublishedStats, part: number, body: () => AsyncIterable<string> | Iterable<string>) => {
    const etag = strongEtag('sitemap', base, urls.home, perFile, part, stats.count, stats.newest ?? '', stats.idSum)
    const opts = { etag, audience: 'everyone' as const, mediaType: SITEMAP_MEDIA_TYPE, cacheControl: SITEMAP_CACHE }
    const lastModified = stats.newest === null ? {} : { lastModified: new Date(stats.newest) }
    // Read lazily: a 304 drops the stream unread, and no post is read.
    return sendRepresentation(req, reply, Readable.from(body()), { ...opts, ...lastModified })
  }
  const schema = (summary: string, description: string, params?: object) => ({
    tags: ['posts'],
    summary,
    description,
    ...(params === undefined ? {} : { params }),
    produces: ['application/xml'],
    response: {
      200: { description: 'The sitemap (application/xml).', content: { 'application/xml': { schema: { type: 'string', description: 'sitemaps.org 0.9: a `urlset`, or a `sitemapindex`.' } } } },
      304: NotModifiedSchema,
      ...problemResponses(...SYSTEM_ERRORS, 404, 406, 422),
    },
  })
  const config = { ignoresCredentials: true }
  app.get('/sitemap.xml', {
    config,
    schema: schema('Sitemap of published posts', `Every published post (\`<loc>\` its public URL, \`<lastmod>\` its \`updated_at\`), for search engines. Past ${perFile} posts, a \`sitemapindex\` of \`/sitemap-posts-{n}.xml\` parts of ${perFile} each. Strong ETag, 304, \`Cache-Control: ${SITEMAP_CACHE}\`. No credential needed.`),
  }, async (req, reply) => {
    const stats = await ctx.store.posts.publishedStats()
    if (stats.count <= perFile) return send(req, reply, stats, 0, () => urlset(base, urls, publishedPages(ctx.store, 0, perFile)))
    return send(req, reply, stats, 0, () => sitemapIndex(base, Math.ceil(stats.count / perFile)))
  })
  app.get<{ Params: SitemapPartParams }>('/sitemap-posts-:n.xml', {
    config,
    schema: schema('A part of the sitemap', `The published posts ${perFile} at a time in id order: part 1 the first ${perFile}, … Only while \`/sitemap.xml\` is an index of parts; a part past the last: 404.`, SitemapPartParamsSchema),
  }, async (req, reply) => {
    const stats = await ctx.store.posts.publishedStats()
    const parts = stats.count > perFile ? Math.ceil(stats.count / perFile) : 0
    const n = req.params.n
    if (n > parts) throw new AppError('NOT_FOUND', `The sitemap has ${parts === 0 ? 'no parts: /sitemap.xml lists every post' : `${parts} parts`}.`)
    // The part's first post, found by its place; the rest follows by id.
    const first = n === 1 ? 0 : await ctx.store.posts.publishedIdAt((n - 1) * perFile - 1)
    if (first === null) throw new AppError('NOT_FOUND', `The sitemap has no part ${n}.`)
    return send(req, reply, stats, n, () => urlset(base, urls, publishedPages(ctx.store, first, perFile)))
  })
}
