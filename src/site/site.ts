import { hash } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import { Counter } from 'prom-client'
import type { AppContext } from '../context.ts'
import { AppError } from '../errors.ts'
import { type ArticleObject, articleObject, type Article, imageObject, jsonLd, ogImageOf, type PaginationObject, pageObjects, perPageOf, type Profile, type Settings, siteObject } from './objects.ts'
import type { KeptAnswer, PublicCache } from '../http/protocol/public-cache.ts'
import { type PageTemplate, renderFailure, Theme } from './theme.ts'

const PAGE_CACHE_CONTROL = 'public, max-age=60, stale-while-revalidate=600'
const NOT_FOUND_CACHE_CONTROL = 'public, max-age=60'
const IMMUTABLE = 'public, max-age=31536000, immutable'
const HTML = 'text/html; charset=utf-8'
const CSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'self'"
const SEARCH_MAX = 200
const PAGE_PATTERN = /^[1-9][0-9]{0,8}$/
const ACCENT_CSS = /^accent-([0-9a-f]{6})\.css$/
/** What a page that failed to render answers: nothing of the theme, the failure or the machine. */
const BUILTIN_500 = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Something went wrong</title></head><body><h1>Something went wrong</h1><p>The page could not be shown. Please try again later.</p></body></html>\n'

/** The reading site and what its tests look at. */
export interface Site {
  readonly app: FastifyInstance
  /** The public answers cache its pages are kept in, beside the API's answers (null: none kept). */
  readonly cache: PublicCache | null
  readonly theme: Theme
}

/** A page as rendered once: what any later request for the same path is answered with. */
interface CachedPage {
  readonly status: number
  readonly body: string | Buffer
  readonly etag: string
  readonly location?: string
}

/** Its key in the public answers cache: the path with its query, apart from the API's keys. */
function keyOf (req: FastifyRequest): string {
  return `site\n${req.url}`
}

function kept (page: CachedPage): KeptAnswer {
  return { status: page.status, headers: page.location === undefined ? {} : { location: page.location }, body: page.body, etag: page.etag }
}

function pageOf (k: KeptAnswer): CachedPage {
  const location = k.headers.location
  return { status: k.status, body: k.body, etag: k.etag, ...(typeof location === 'string' ? { location } : {}) }
}

/** Strong: of the bytes themselves, so equal pages have equal tags on every instance. */
function etagOf (body: string): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 27)}"`
}

/** RFC 9110 §13.1.2: If-None-Match with a weak comparison (a `W/` tag matches its strong self). */
function notModified (req: FastifyRequest, etag: string): boolean {
  const inm = req.headers['if-none-match']
  if (inm === undefined) return false
  if (inm.trim() === '*') return true
  return inm.split(',').map(t => t.trim().replace(/^W\//, '')).includes(etag)
}

/** The request's path, and its query string (as sent) when it has one. */
function pathOf (req: FastifyRequest): { path: string, query: string } {
  const i = req.url.indexOf('?')
  return i < 0 ? { path: req.url, query: '' } : { path: req.url.slice(0, i), query: req.url.slice(i) }
}

function pageNumber (raw: string | undefined): number | null {
  if (raw === undefined) return 1
  return PAGE_PATTERN.test(raw) ? Number(raw) : null
}

class NotFound extends Error {}

/**
 * Builds the reading site (docs/site.md): a Fastify instance of its own, which
 * `server.ts` listens with on SITE_PORT beside the API. Its pages are made from the parts' public
 * services and rendered by the theme; they are kept in this instance's page cache until the event
 * log says something changed. `api` answers the feeds and the sitemap, which the site serves as
 * they are.
 */
export async function buildSite (context: AppContext, api: FastifyInstance, theme = new Theme(context.config.site.themeDir)): Promise<Site> {
  const { config, services, log: root } = context
  const log = root.child({ component: 'site' })
  const base = config.site.baseUrl ?? `http://${config.host}:${config.site.port ?? 0}`
  const cache = context.publicCache
  const reads = new Counter({ name: 'site_page_cache_reads_total', help: 'Pages of the reading site asked for, by whether the page cache had them', labelNames: ['result'], registers: [context.metrics] })
  // Bound once: a label set looked up on every page is a hash of it each time.
  const hits = reads.labels({ result: 'hit' })
  const misses = reads.labels({ result: 'miss' })
  const app = Fastify({
    loggerInstance: log,
    // Pages are logged when they fail; a line per page read would be most of the log.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.trustProxy,
    exposeHeadRoutes: true,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 200 },
  })
  // The image routes the site shares with the API give up on a variant when this fires:
  // REQUEST_TIMEOUT_MS after a route first reads it. Made on that read, since only those routes
  // do: a timer for every page asked for (thousands a second, each alive for the whole timeout)
  // was most of a kept page's slowest answers.
  const SIGNAL = Symbol('abandoned')
  app.decorateRequest(SIGNAL, null)
  app.decorateRequest('abandoned', {
    getter (this: FastifyRequest): AbortSignal {
      const req = this as FastifyRequest & { [SIGNAL]: AbortSignal | null }
      return (req[SIGNAL] ??= AbortSignal.timeout(config.requestTimeoutMs))
    },
  })

  // Security headers on every answer, whatever made it. Hooks with a callback, not async: an
  // async hook costs a promise and a microtask on every page.
  app.addHook('onSend', (_req, reply, payload, done) => {
    reply.header('content-security-policy', CSP)
    reply.header('x-content-type-options', 'nosniff')
    if (reply.getHeader('referrer-policy') === undefined) reply.header('referrer-policy', 'strict-origin-when-cross-origin')
    reply.removeHeader('set-cookie')
    done(null, payload)
  })

  // A path with a trailing slash is the same page without it.
  app.addHook('onRequest', (req, reply, done) => {
    const { path, query } = pathOf(req)
    if (path.length > 1 && path.endsWith('/')) {
      // One leading slash: `//elsewhere.example/` must not lead to another origin.
      const to = `/${path.replace(/^\/+/, '').replace(/\/+$/, '')}`
      reply.code(301).header('location', `${to}${query}`).header('cache-control', PAGE_CACHE_CONTROL).send()
      return
    }
    done()
  })

  const settings = async (): Promise<Settings> => (await services.siteSettings.read()).settings

  const people = async (list: readonly Article[]): Promise<ReadonlyMap<string, Profile>> =>
    await services.identity.profiles(list.flatMap(a => a.authors))

  const render = async (template: PageTemplate, data: Record<string, unknown>): Promise<string> => {
    try {
      return await theme.render(template, data)
    } catch (err) {
      const where = renderFailure(err)
      log.error({ template: where.template ?? template, line: where.line, error: where.reason }, 'a theme template failed to render')
      throw new RenderFailed()
    }
  }

  const send = (req: FastifyRequest, reply: FastifyReply, page: CachedPage, cacheControl: string) => {
    if (page.location !== undefined) return reply.code(page.status).header('location', page.location).header('cache-control', cacheControl).send()
    reply.header('etag', page.etag).header('cache-control', cacheControl)
    if (page.status === 200 && notModified(req, page.etag)) return reply.code(304).send()
    return reply.code(page.status).header('content-type', HTML).send(page.body)
  }

  /** The page from the cache, else made (and kept, when it is a 200 or a redirect). */
  const answer = async (req: FastifyRequest, reply: FastifyReply, make: () => Promise<CachedPage>) => {
    const key = keyOf(req)
    const hit = cache?.find(key)
    if (hit !== undefined) {
      hits.inc()
      return send(req, reply, pageOf(hit), PAGE_CACHE_CONTROL)
    }
    misses.inc()
    const generation = cache?.generation ?? 0
    const page = await make()
    cache?.keep(key, generation, kept(page))
    return send(req, reply, page, PAGE_CACHE_CONTROL)
  }

  const redirect = (location: string): CachedPage => ({ status: 301, body: '', etag: '', location })
  const html = (body: string): CachedPage => ({ status: 200, body, etag: etagOf(body) })

  /** `page` for a page of `kind` at `path` (absolute canonical). */
  const pageObject = (s: Settings, o: { kind: string, heading: string, title?: string, description?: string, path: string, canonical?: string | null, image?: ReturnType<typeof imageObject>, imageFacts?: Parameters<typeof ogImageOf>[0] | null, feeds?: string, feedTitle?: string, ld: unknown, robots?: string }) => ({
    kind: o.kind,
    heading: o.heading,
    title: o.title ?? (o.heading === s.title ? s.title : `${o.heading} – ${s.title}`),
    description: o.description !== undefined && o.description !== '' ? o.description : s.description !== '' ? s.description : s.title,
    url: `${base}${o.path}`,
    canonical: o.canonical ?? `${base}${o.path}`,
    og_type: o.kind === 'post' ? 'article' : 'website',
    image: o.image ?? null,
    og_image: o.imageFacts === undefined || o.imageFacts === null ? null : ogImageOf(o.imageFacts, base),
    feed_atom: `${base}/feed.atom${o.feeds ?? ''}`,
    feed_json: `${base}/feed.json${o.feeds ?? ''}`,
    feed_title: o.feedTitle ?? s.title,
    json_ld: jsonLd({ '@context': 'https://schema.org', ...o.ld as object }),
    robots: o.robots ?? null,
    preview: false,
    status: 200,
  })

  const pagination = (page: number, total: number, perPage: number, at: (n: number) => string): PaginationObject => {
    const pages = Math.max(1, Math.ceil(total / perPage))
    return { page, pages, total, prev_url: page > 1 ? `${base}${at(page - 1)}` : null, next_url: page < pages ? `${base}${at(page + 1)}` : null }
  }

  /** A paged list of published articles: its page `n` (page 1 lives at `at(1)`; beyond the last: 404). */
  const listPage = async (n: number, filter: { tag?: string, author?: string, q?: string }, at: (n: number) => string, make: (s: Settings, list: ArticleObject[], p: PaginationObject) => Promise<string>): Promise<CachedPage> => {
    const s = await settings()
    const perPage = perPageOf(s)
    const { items, total } = await services.articles.page({ ...filter, offset: (n - 1) * perPage, limit: perPage })
    if (n > 1 && items.length === 0) throw new NotFound()
    const who = await people(items)
    return html(await make(s, items.map(a => articleObject(a, who, base)), pagination(n, total, perPage, at)))
  }

  const homeAt = (n: number) => n === 1 ? '/' : `/page/${n}`
  const home = async (n: number) => await listPage(n, {}, homeAt, async (s, list, p) => await render('index', pageObjects({
    site: siteObject(s, base),
    page: pageObject(s, { kind: 'home', heading: s.title, title: n === 1 ? s.title : `${s.title} – page ${n}`, path: homeAt(n), image: imageObject(s.cover_image), imageFacts: s.cover_image, ld: { '@type': 'Blog', name: s.title, description: s.description, url: `${base}/` } }),
    list,
    pagination: p,
  })))

  app.get('/', async (req, reply) => await answer(req, reply, async () => await home(1)))
  app.get<{ Params: { n: string } }>('/page/:n', async (req, reply) => {
    const n = pageNumber(req.params.n)
    if (n === null) throw new NotFound()
    return await answer(req, reply, async () => n === 1 ? redirect('/') : await home(n))
  })

  const tagPage = async (slug: string, n: number) => {
    const tag = await services.articles.tag(slug)
    if (tag === null) throw new NotFound()
    const at = (k: number) => k === 1 ? `/tag/${slug}` : `/tag/${slug}/page/${k}`
    return await listPage(n, { tag: slug }, at, async (s, list, p) => await render('tag', pageObjects({
      site: siteObject(s, base),
      page: pageObject(s, { kind: 'tag', heading: `Tagged “${tag.name}”`, description: `Everything tagged “${tag.name}”.`, path: at(n), feeds: `?tag=${encodeURIComponent(tag.name)}`, feedTitle: `${s.title}: ${tag.name}`, ld: { '@type': 'CollectionPage', name: tag.name, url: `${base}${at(n)}` } }),
      list,
      pagination: p,
      tag: { name: tag.name, slug, count: tag.count, url: `/tag/${slug}` },
    })))
  }
  app.get<{ Params: { slug: string } }>('/tag/:slug', async (req, reply) => await answer(req, reply, async () => await tagPage(req.params.slug, 1)))
  app.get<{ Params: { slug: string, n: string } }>('/tag/:slug/page/:n', async (req, reply) => {
    const n = pageNumber(req.params.n)
    if (n === null) throw new NotFound()
    return await answer(req, reply, async () => n === 1 ? redirect(`/tag/${req.params.slug}`) : await tagPage(req.params.slug, n))
  })

  const authorPage = async (slug: string, n: number): Promise<CachedPage> => {
    const found = await services.identity.profile(slug)
    if (found === null) throw new NotFound()
    if ('movedTo' in found) return redirect(n === 1 ? `/author/${found.movedTo}` : `/author/${found.movedTo}/page/${n}`)
    const person = found.profile
    const at = (k: number) => k === 1 ? `/author/${slug}` : `/author/${slug}/page/${k}`
    const avatar = person.avatar === null ? null : await avatarOf(person.avatar)
    return await listPage(n, { author: slug }, at, async (s, list, p) => {
      if (p.total === 0) throw new NotFound()
      return await render('author', pageObjects({
        site: siteObject(s, base),
        page: pageObject(s, { kind: 'author', heading: person.name, description: person.bio !== '' ? person.bio : `Written by ${person.name}.`, path: at(n), image: imageObject(avatar), ld: { '@type': 'ProfilePage', mainEntity: { '@type': 'Person', name: person.name, url: `${base}/author/${slug}`, ...(person.website === null ? {} : { sameAs: person.website }) } } }),
        list,
        pagination: p,
        author: { name: person.name, slug, bio: person.bio, website: person.website, avatar: imageObject(avatar), url: `/author/${slug}` },
      }))
    })
  }
  const images = context.resources.find(r => r.images !== undefined)?.images
  const avatarOf = async (id: string) => images === undefined ? null : (await images.find(context.store, [id], config)).get(id) ?? null
  app.get<{ Params: { slug: string } }>('/author/:slug', async (req, reply) => await answer(req, reply, async () => await authorPage(req.params.slug, 1)))
  app.get<{ Params: { slug: string, n: string } }>('/author/:slug/page/:n', async (req, reply) => {
    const n = pageNumber(req.params.n)
    if (n === null) throw new NotFound()
    return await answer(req, reply, async () => n === 1 ? redirect(`/author/${req.params.slug}`) : await authorPage(req.params.slug, n))
  })

  app.get<{ Querystring: Record<string, string | string[] | undefined> }>('/search', async (req, reply) => {
    const raw = req.query.q
    const q = (Array.isArray(raw) ? raw[0] ?? '' : raw ?? '').trim().slice(0, SEARCH_MAX)
    const rawPage = req.query.page
    const n = pageNumber(Array.isArray(rawPage) ? rawPage[0] : rawPage)
    if (n === null) throw new NotFound()
    const at = (k: number) => `/search?q=${encodeURIComponent(q)}${k === 1 ? '' : `&page=${k}`}`
    return await answer(req, reply, async () => {
      const make = async (s: Settings, list: ArticleObject[], p: PaginationObject) => await render('search', pageObjects({
        site: siteObject(s, base),
        page: pageObject(s, { kind: 'search', heading: q === '' ? 'Search' : `Search: ${q}`, path: q === '' ? '/search' : at(n), robots: 'noindex, follow', ld: { '@type': 'SearchResultsPage', name: q } }),
        list,
        pagination: p,
        query: q,
      }))
      if (q === '') {
        const s = await settings()
        return html(await make(s, [], { page: 1, pages: 1, total: 0, prev_url: null, next_url: null }))
      }
      return await listPage(n, { q }, at, make)
    })
  })

  /** The page of one article: its own, or (`preview`) what a preview link shows, marked as such. */
  const articleHtml = async (a: Article, preview: boolean): Promise<string> => {
    const [s, who] = await Promise.all([settings(), people([a])])
    const post = articleObject(a, who, base)
    const ogImage = a.featureImage === null ? null : ogImageOf(a.featureImage, base)
    const ld = {
      '@type': 'BlogPosting',
      headline: a.title,
      datePublished: a.publishedAt,
      dateModified: a.updatedAt,
      author: post.authors.map(p => ({ '@type': 'Person', name: p.name, ...(p.url === null ? {} : { url: `${base}${p.url}` }) })),
      ...(ogImage === null ? {} : { image: ogImage }),
      publisher: { '@type': 'Organization', name: s.title, ...(s.logo === null ? {} : { logo: { '@type': 'ImageObject', url: `${base}${s.logo.url}` } }) },
      mainEntityOfPage: a.canonicalUrl ?? `${base}/${a.slug}`,
      description: a.metaDescription ?? a.excerpt,
    }
    const page = pageObject(s, { kind: 'post', heading: a.title, title: a.metaTitle ?? undefined, description: a.metaDescription ?? a.excerpt, path: `/${a.slug}`, canonical: a.canonicalUrl, image: post.feature_image, imageFacts: a.featureImage, ld, ...(preview ? { robots: 'noindex, nofollow' } : {}) })
    return await render('post', pageObjects({ site: siteObject(s, base), page: { ...page, preview }, post }))
  }

  const articlePage = async (slug: string): Promise<CachedPage> => {
    const found = await services.articles.bySlug(slug)
    if (found === null) throw new NotFound()
    if ('movedTo' in found) return redirect(`/${found.movedTo}`)
    return html(await articleHtml(found.article, false))
  }

  // A preview link: the post's page, marked, never kept by anyone (the URL itself is the secret).
  app.get<{ Params: { token: string } }>('/p/:token', async (req, reply) => {
    reply.header('cache-control', 'private, no-store').header('x-robots-tag', 'noindex, nofollow').header('referrer-policy', 'no-referrer')
    const found = req.params.token.length > 200 ? null : await services.articles.preview(req.params.token)
    if (found === null) return await notFoundPage(reply, 'private, no-store')
    if ('publishedAs' in found) return await reply.code(308).header('location', `/${found.publishedAs}`).send()
    return await reply.code(200).header('content-type', HTML).send(await articleHtml(found.article, true))
  })

  // The theme's files, under content-hashed names; the accent colour's sheet is named by the colour.
  app.get<{ Params: { '*': string } }>('/assets/*', async (req, reply) => {
    const name = req.params['*']
    const accent = ACCENT_CSS.exec(name)
    if (accent !== null) {
      const body = `:root{--accent:#${accent[1]!}}\n`
      return await reply.header('cache-control', IMMUTABLE).header('etag', etagOf(body)).type('text/css; charset=utf-8').send(body)
    }
    const asset = theme.asset(name)
    if (asset === undefined) throw new NotFound()
    reply.header('cache-control', IMMUTABLE).header('etag', asset.etag)
    if (notModified(req, asset.etag)) return await reply.code(304).send()
    return await reply.type(asset.type).send(asset.body)
  })

  app.get('/favicon.ico', async (req, reply) => {
    const s = await settings()
    if (s.icon !== null) return await reply.code(302).header('location', s.icon.url).header('cache-control', NOT_FOUND_CACHE_CONTROL).send()
    const served = theme.assetPath('favicon.ico')
    const asset = served === null ? undefined : theme.asset(served.slice('/assets/'.length))
    if (asset === undefined) throw new NotFound()
    reply.header('cache-control', 'public, max-age=86400').header('etag', asset.etag)
    if (notModified(req, asset.etag)) return await reply.code(304).send()
    return await reply.type(asset.type).send(asset.body)
  })

  app.get('/robots.txt', async (_req, reply) => {
    return await reply.type('text/plain; charset=utf-8').header('cache-control', PAGE_CACHE_CONTROL).send(`User-agent: *\nAllow: /\n\nSitemap: ${base}/sitemap.xml\n`)
  })

  // The feeds and the sitemap, as the API answers them (their URLs are the site's when the site is on):
  // the paths the parts serve the same in every version whose names say they are feeds or sitemaps.
  const feeds = context.resources.flatMap(r => r.unversionedPaths ?? []).filter(p => /^\/(feed|sitemap)[^/]*$/.test(p))
  for (const path of feeds) {
    app.get(path, async (req, reply) => {
      const headers: Record<string, string> = {}
      for (const h of ['accept', 'if-none-match', 'if-modified-since']) {
        const v = req.headers[h]
        if (typeof v === 'string') headers[h] = v
      }
      // The reader's address, so that the API's rate limit counts each reader, not the site.
      const res = await api.inject({ method: 'GET', url: req.url, headers, remoteAddress: req.ip })
      if (res.statusCode === 404) throw new NotFound()
      for (const h of ['content-type', 'etag', 'last-modified', 'cache-control', 'vary']) {
        const v = res.headers[h]
        if (v !== undefined) reply.header(h, v)
      }
      return await reply.code(res.statusCode).send(res.rawPayload)
    })
  }

  // The images a page shows, from the page's own origin.
  for (const r of context.resources) await r.siteRoutes?.(app, context)

  app.get<{ Params: { slug: string } }>('/:slug', async (req, reply) => await answer(req, reply, async () => await articlePage(req.params.slug)))

  // Any other path whose last segment is a post's slug (an imported permalink) leads to the post.
  app.get('/*', async (req, reply) => {
    const last = pathOf(req).path.split('/').filter(s => s !== '').at(-1)
    if (last === undefined) throw new NotFound()
    let slug: string
    try { slug = decodeURIComponent(last) } catch { throw new NotFound() }
    const found = await services.articles.bySlug(slug)
    if (found === null) throw new NotFound()
    const to = 'movedTo' in found ? found.movedTo : found.article.slug
    return await reply.code(301).header('location', `/${to}`).header('cache-control', PAGE_CACHE_CONTROL).send()
  })

  const notFoundPage = async (reply: FastifyReply, cacheControl = NOT_FOUND_CACHE_CONTROL) => {
    const s = await settings()
    const body = await render('error', pageObjects({
      site: siteObject(s, base),
      page: { ...pageObject(s, { kind: 'error', heading: 'Page not found', path: '/404', robots: 'noindex', ld: { '@type': 'WebPage', name: 'Page not found' } }), status: 404 },
    }))
    return await reply.code(404).header('content-type', HTML).header('cache-control', cacheControl).send(body)
  }
  const failed = async (reply: FastifyReply) => await reply.code(500).header('content-type', HTML).header('cache-control', 'no-store').send(BUILTIN_500)

  app.setNotFoundHandler(async (_req, reply) => {
    try { return await notFoundPage(reply) } catch { return await failed(reply) }
  })
  app.setErrorHandler(async (err, req, reply) => {
    const status = err instanceof AppError
      ? context.catalogue.problems[err.code]?.status ?? 500
      : err instanceof NotFound ? 404 : (err as { statusCode?: number }).statusCode ?? 500
    if (status === 404) {
      try { return await notFoundPage(reply) } catch { return await failed(reply) }
    }
    if (status < 500) {
      return await reply.code(status).header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-store').send(`${status}\n`)
    }
    if (!(err instanceof RenderFailed)) req.log.error({ err }, 'a site page failed')
    return await failed(reply)
  })

  return { app, cache, theme }
}

class RenderFailed extends Error {}
