import { XMLBuilder } from 'fast-xml-parser'
import type { PublicUrls } from './public-urls.ts'

/** What a feed shows of a post. */
export interface FeedEntry {
  readonly id: number
  readonly slug: string
  readonly title: string
  /** Who wrote it: its listed authors (with their pages), or the name of the credential that made it. */
  readonly authors: readonly FeedAuthor[]
  readonly tags: readonly string[]
  readonly excerpt: string
  readonly contentHtml: string
  readonly publishedAt: string
  readonly updatedAt: string
  /** Where the post's original lives, when it is elsewhere (its SEO `canonical_url`). */
  readonly canonicalUrl: string | null
  /** The feature image's path (`/media/{id}/image`), or null. */
  readonly image: string | null
}

export interface FeedAuthor {
  readonly name: string
  /** The author's page (absolute), for a listed author. */
  readonly url?: string
}

/** Where a feed lives and what it is of: `tag` for the feed of one tag. */
export interface FeedMeta {
  /** PUBLIC_BASE_URL, without a trailing slash. */
  readonly baseUrl: string
  /** Where readers find the blog's posts and authors (the reading site when it is on). */
  readonly urls: PublicUrls
  /** The feed's own URL, as the client asked for it (with `?tag=`). */
  readonly selfUrl: string
  readonly tag: string | null
}

export const FEED_TITLE = 'Blog posts'
const EPOCH = '1970-01-01T00:00:00.000Z'

export const ATOM_MEDIA_TYPE = 'application/atom+xml; charset=utf-8'
export const JSON_FEED_MEDIA_TYPE = 'application/feed+json; charset=utf-8'

function titleOf (meta: FeedMeta): string {
  return meta.tag === null ? FEED_TITLE : `${FEED_TITLE} tagged ${meta.tag}`
}

/** The feed's `updated`: its newest entry's, or the epoch for an empty feed (Atom requires one). */
export function feedUpdated (entries: readonly FeedEntry[]): string {
  return entries.reduce((max, e) => e.updatedAt > max ? e.updatedAt : max, EPOCH)
}

// XML 1.0 §2.2: characters a document may hold. Anything else (C0 controls, lone surrogates)
// cannot be escaped, only left out.
const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu

function xmlText (s: string): string {
  return s.replace(NOT_XML_CHAR, '')
}

const postUrl = (meta: FeedMeta, e: FeedEntry) => meta.urls.post(e.slug)
const postId = (meta: FeedMeta, e: FeedEntry) => `${meta.baseUrl}/posts/${e.id}`

/**
 * fast-xml-parser's builder escapes every text and attribute value (`&`, `<`, `>`, quotes, and an
 * `&` that looks like an entity too: content_html's `&lt;` must stay `&lt;` once parsed).
 */
const xml = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@', textNodeName: '#text', suppressEmptyNode: true, processEntities: true })

/** An Atom 1.0 document (RFC 4287); no user text is concatenated into XML here. */
export function atomFeed (entries: readonly FeedEntry[], meta: FeedMeta): string {
  return xml.build({
    '?xml': { '@version': '1.0', '@encoding': 'UTF-8' },
    feed: {
      '@xmlns': 'http://www.w3.org/2005/Atom',
      id: xmlText(meta.selfUrl),
      title: { '@type': 'text', '#text': xmlText(titleOf(meta)) },
      updated: feedUpdated(entries),
      link: [
        { '@rel': 'self', '@type': 'application/atom+xml', '@href': xmlText(meta.selfUrl) },
        { '@rel': 'alternate', '@type': 'application/json', '@href': `${meta.baseUrl}/posts` },
      ],
      author: { name: FEED_TITLE },
      generator: 'blog-post-service',
      entry: entries.map(e => ({
        id: postId(meta, e),
        title: { '@type': 'text', '#text': xmlText(e.title) },
        // RFC 4287 §4.2.7.2: one `alternate` per type and language; the original elsewhere is `related`;
        // a related resource that may be large (the feature image) is an `enclosure`.
        link: [
          { '@rel': 'alternate', '@type': 'text/html', '@href': postUrl(meta, e) },
          ...(e.canonicalUrl === null ? [] : [{ '@rel': 'related', '@type': 'text/html', '@href': xmlText(e.canonicalUrl) }]),
          ...(e.image === null ? [] : [{ '@rel': 'enclosure', '@href': xmlText(`${meta.baseUrl}${e.image}`) }]),
        ],
        published: e.publishedAt,
        updated: e.updatedAt,
        author: e.authors.map(a => ({ name: xmlText(a.name), ...(a.url === undefined ? {} : { uri: xmlText(a.url) }) })),
        category: e.tags.map(tag => ({ '@term': xmlText(tag) })),
        summary: { '@type': 'text', '#text': xmlText(e.excerpt) },
        content: { '@type': 'html', '#text': xmlText(e.contentHtml) },
      })),
    },
  }) as string
}

/** A JSON Feed 1.1 document (https://jsonfeed.org/version/1.1). */
export function jsonFeed (entries: readonly FeedEntry[], meta: FeedMeta): Record<string, unknown> {
  return {
    version: 'https://jsonfeed.org/version/1.1',
    title: titleOf(meta),
    home_page_url: meta.urls.home === '' ? '/' : `${meta.urls.home}/`,
    feed_url: meta.selfUrl,
    language: 'en',
    items: entries.map(e => ({
      id: postId(meta, e),
      url: postUrl(meta, e),
      ...(e.canonicalUrl === null ? {} : { external_url: e.canonicalUrl }),
      title: e.title,
      content_html: e.contentHtml,
      summary: e.excerpt,
      date_published: e.publishedAt,
      date_modified: e.updatedAt,
      authors: e.authors.map(a => ({ name: a.name, ...(a.url === undefined ? {} : { url: a.url }) })),
      tags: [...e.tags],
      ...(e.image === null ? {} : { image: `${meta.baseUrl}${e.image}` }),
    })),
  }
}
