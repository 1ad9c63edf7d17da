import { deriveSlug } from '../../domain/slug.ts'
import type { ImageFacts, PartContext, Services } from '../../http/contract/resources.ts'
import type { Principal } from '../../domain/principal.ts'
import type { Store } from '../../store/store.ts'
import type { Post, PostSummary } from './post.ts'
import { PostService } from './post-service.ts'
import { hashToken, pinnedPost } from './preview-links/preview-links.ts'
import { searchCatchUp } from './jobs/search-indexer.ts'
import type { PostFilter } from './store.ts'

/** A published post as a reader sees it: what a page of the reading site shows. */
export interface Article {
  readonly id: number
  readonly slug: string
  readonly title: string
  readonly excerpt: string
  /** Only on a single article (`bySlug`); lists leave it empty. */
  readonly contentHtml: string
  readonly publishedAt: string
  readonly updatedAt: string
  /** The slugs of the users who wrote it, in order; empty when no person did. */
  readonly authors: readonly string[]
  /** The primary author's slug, or the name of the credential that wrote it. */
  readonly author: string
  readonly tags: readonly { readonly name: string, readonly slug: string }[]
  readonly featureImage: ImageFacts | null
  readonly metaTitle: string | null
  readonly metaDescription: string | null
  readonly canonicalUrl: string | null
  /** Minutes at 230 words a minute, at least 1 (single articles only; 0 in lists). */
  readonly readingMinutes: number
}

/** What a list asks for: one tag (its slug), one author (a user's slug), or a search; newest first. */
export interface ArticleQuery {
  readonly tag?: string
  readonly author?: string
  readonly q?: string
  readonly offset: number
  readonly limit: number
}

export interface ArticleTag { readonly name: string, readonly slug: string, readonly count: number }

/**
 * The published posts as readers see them, for faces other than the API (the reading site): public
 * only, whoever asks. Anything not published is not there.
 */
export interface Articles {
  /** A page of published posts, newest first, with how many there are in all. */
  page (query: ArticleQuery): Promise<{ readonly items: readonly Article[], readonly total: number }>
  /** The published post whose slug this is; an old slug: the current one; else null. */
  bySlug (slug: string): Promise<{ readonly article: Article } | { readonly movedTo: string } | null>
  /** The tag whose slug (its name folded as a post's slug is) this is, among published posts; else null. */
  tag (slug: string): Promise<ArticleTag | null>
  /**
   * What a preview link shows (any status; a pinned link, its revision's fields over the post), or
   * `{ publishedAs }` for a link not pinned to a post since published; null for an unknown, expired
   * or revoked token, or a deleted post.
   */
  preview (token: string): Promise<{ readonly article: Article } | { readonly publishedAs: string } | null>
}

declare module '../../http/contract/resources.ts' { interface Services { readonly articles: Articles } }

const WORDS_PER_MINUTE = 230
/** Tags looked through for a slug: a blog with more tags than this finds only the most used. */
const TAGS_SCANNED = 5000

function tagsOf (names: readonly string[]) {
  return names.map(name => ({ name, slug: deriveSlug(name) }))
}

function readingMinutes (html: string): number {
  const words = html.replace(/<[^>]*>/g, ' ').split(/\s+/).filter(w => w !== '').length
  return Math.max(1, Math.round(words / WORDS_PER_MINUTE))
}

function articleOf (p: PostSummary & { contentHtml?: string }): Article {
  const html = p.contentHtml ?? ''
  return {
    id: p.id,
    slug: p.slug,
    title: p.title,
    excerpt: p.excerpt,
    contentHtml: html,
    publishedAt: p.publishedAt ?? p.updatedAt,
    updatedAt: p.updatedAt,
    authors: p.authors,
    author: p.author,
    tags: tagsOf(p.tags),
    featureImage: p.featureImage,
    metaTitle: p.metaTitle,
    metaDescription: p.metaDescription,
    canonicalUrl: p.canonicalUrl,
    readingMinutes: p.contentHtml === undefined ? 0 : readingMinutes(html),
  }
}

class PublishedArticles implements Articles {
  private readonly reader: PostService
  private readonly clock: PartContext['clock']

  constructor (private readonly store: Store, ctx: PartContext) {
    this.clock = ctx.clock
    this.reader = new PostService(store, { revisionsKeep: ctx.config.editorial.revisionsKeep, clock: ctx.clock, searchCurrent: searchCatchUp(store) })
  }

  async page (query: ArticleQuery) {
    let tagKeys: string[] | undefined
    if (query.tag !== undefined) {
      const tag = await this.tag(query.tag)
      if (tag === null) return { items: [], total: 0 }
      tagKeys = [tag.name.trim().toLowerCase()]
    }
    const filter: PostFilter = {
      status: 'published',
      ...(tagKeys === undefined ? {} : { tag: tagKeys }),
      ...(query.author === undefined ? {} : { author: query.author }),
      ...(query.q === undefined ? {} : { q: query.q }),
    }
    const page = await this.reader.listSummaries({ filter, sort: [{ key: 'published_at', direction: 'desc' }, { key: 'id', direction: 'desc' }], limit: query.limit, offset: query.offset, count: true }, null)
    return { items: page.items.map(articleOf), total: page.total ?? page.items.length }
  }

  async bySlug (slug: string) {
    const found = await this.store.posts.findBySlug(slug, null)
    if (found === null) return null
    if ('movedTo' in found) return { movedTo: found.movedTo }
    const post: Post = found.post
    return post.status === 'published' ? { article: articleOf(post) } : null
  }

  async tag (slug: string): Promise<ArticleTag | null> {
    const page = await this.store.posts.tags({ filter: {}, sort: [{ key: 'count', direction: 'desc' }, { key: 'id', direction: 'asc' }], limit: TAGS_SCANNED }, null)
    const tag = page.items.find(t => deriveSlug(t.name) === slug)
    return tag === undefined ? null : { name: tag.name, slug, count: tag.count }
  }

  async preview (token: string) {
    const link = await this.store.previewLinks.findByTokenHash(hashToken(token), this.clock.now())
    if (link === null) return null
    const post = await this.store.posts.findById(link.postId, LINK_HOLDER)
    if (post === null) return null
    if (link.revision === null) return post.status === 'published' ? { publishedAs: post.slug } : { article: articleOf(post) }
    const revision = await this.store.revisions.find(link.postId, link.revision)
    return revision === null ? null : { article: articleOf(pinnedPost(post, revision)) }
  }
}

/** Whoever holds a preview link sees the post as its author would. */
const LINK_HOLDER: Principal = { subject: 'preview-link', scopes: new Set(['admin']), kind: 'api-key' }

/** The posts' service for other faces: `services.articles`. */
export function articleServices (ctx: PartContext): Partial<Services> {
  return { articles: new PublishedArticles(ctx.store, ctx) }
}
