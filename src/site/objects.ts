import type { ImageFacts, Services } from '../http/contract/resources.ts'

/** What the reading site's pages are made of, as their services give them. */
export type Article = Awaited<ReturnType<Services['articles']['page']>>['items'][number]
export type Settings = Awaited<ReturnType<Services['siteSettings']['read']>>['settings']
export type Profile = Awaited<ReturnType<Services['identity']['profiles']>> extends ReadonlyMap<string, infer P> ? P : never

/** An image as templates see it (docs/themes.md). */
export interface ImageObject {
  readonly url: string
  readonly srcset: string
  readonly width: number
  readonly height: number
  readonly alt: string
  readonly placeholder: string
}

export interface PersonObject { readonly name: string, readonly slug: string | null, readonly url: string | null }

/** The width offered nearest 1 200 px (what Open Graph and large cards show), as an absolute URL. */
export function ogImageOf (image: ImageFacts, base: string): string {
  const offered = image.srcset.split(',').map(s => s.trim().split(/\s+/)).flatMap(([url, w]) => url === undefined || w === undefined ? [] : [{ url, w: Number.parseInt(w, 10) }])
  const best = offered.reduce<{ url: string, w: number } | null>((b, o) => b === null || Math.abs(o.w - 1200) < Math.abs(b.w - 1200) ? o : b, null)
  return `${base}${best?.url ?? image.url}`
}

export function imageObject (image: ImageFacts | null): ImageObject | null {
  if (image === null) return null
  return { url: image.url, srcset: image.srcset, width: image.width, height: image.height, alt: image.alt, placeholder: image.placeholder }
}

/** The settings as templates see them: `site` (docs/themes.md). */
export function siteObject (s: Settings, base: string) {
  return {
    title: s.title,
    description: s.description,
    language: s.language,
    url: base,
    accent_color: s.accent_color,
    accent_css: `/assets/accent-${s.accent_color.slice(1)}.css`,
    navigation: s.navigation.map(l => ({ label: l.label, url: l.url })),
    posts_per_page: s.posts_per_page,
    logo: imageObject(s.logo),
    icon: imageObject(s.icon),
    cover_image: imageObject(s.cover_image),
    feed_atom: `${base}/feed.atom`,
    feed_json: `${base}/feed.json`,
  }
}

/** One published post as templates see it: `post`, and each item of the list a page shows (docs/themes.md). */
export function articleObject (a: Article, people: ReadonlyMap<string, Profile>, base: string) {
  const authors: PersonObject[] = a.authors.length === 0
    ? [{ name: a.author, slug: null, url: null }]
    : a.authors.map(slug => ({ name: people.get(slug)?.name ?? slug, slug, url: `/author/${slug}` }))
  return {
    id: a.id,
    title: a.title,
    slug: a.slug,
    url: `/${a.slug}`,
    absolute_url: `${base}/${a.slug}`,
    excerpt: a.excerpt,
    content_html: a.contentHtml,
    published_at: a.publishedAt,
    updated_at: a.updatedAt,
    reading_minutes: a.readingMinutes,
    authors,
    tags: a.tags.map(t => ({ name: t.name, slug: t.slug, url: `/tag/${t.slug}` })),
    feature_image: imageObject(a.featureImage),
    meta_title: a.metaTitle,
    meta_description: a.metaDescription,
    canonical_url: a.canonicalUrl,
  }
}
export type ArticleObject = ReturnType<typeof articleObject>

/** `pagination`: where a paged list is, with the URLs of its neighbours (absolute). */
export interface PaginationObject {
  readonly page: number
  readonly pages: number
  readonly total: number
  readonly prev_url: string | null
  readonly next_url: string | null
}

/** How many articles a list page shows (the settings' `posts_per_page`). */
export function perPageOf (s: Settings): number {
  return s.posts_per_page
}

/** A JSON-LD document safe inside `<script>`: no `<` can end the element early. */
export function jsonLd (doc: unknown): string {
  return JSON.stringify(doc).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

/**
 * What a page's template is handed: its objects, under the names themes know (docs/themes.md).
 * `list` is the page's list of published posts, which themes read as `posts`.
 */
export function pageObjects (o: {
  site: ReturnType<typeof siteObject>
  page: Record<string, unknown>
  post?: ArticleObject
  list?: readonly ArticleObject[]
  pagination?: PaginationObject
  tag?: Record<string, unknown>
  author?: Record<string, unknown>
  query?: string
}): Record<string, unknown> {
  return {
    site: o.site,
    page: o.page,
    post: o.post ?? null,
    posts: o.list ?? [],
    pagination: o.pagination ?? null,
    tag: o.tag ?? null,
    author: o.author ?? null,
    query: o.query ?? '',
  }
}
