import type { FormatWriter } from '../../../http/contract/resources.ts'
import type { Post } from '../post.ts'

/** A post as a blog's export file holds it: what another blog engine reads back. */
export interface WxrEntry {
  readonly id: number
  readonly title: string
  /** Markdown, and the HTML it renders to. */
  readonly content: string
  readonly contentHtml: string
  readonly status: Post['status']
  readonly slug: string
  readonly tags: readonly string[]
  readonly excerpt: string
  readonly author: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly publishedAt: string | null
  readonly publishAt: string | null
}

/** A post as a WXR file holds it: what an import of that file gives back. */
export function wxrEntry (post: Post): WxrEntry {
  return {
    id: post.id,
    title: post.title,
    content: post.content,
    contentHtml: post.contentHtml,
    status: post.status,
    slug: post.slug,
    tags: post.tags,
    excerpt: post.excerpt,
    author: post.author,
    createdAt: post.createdAt,
    updatedAt: post.updatedAt,
    publishedAt: post.publishedAt,
    publishAt: post.publishAt,
  }
}

/** What WordPress's WXR 1.2 calls a post's state, for each of this service's. */
const WP_STATUS: Readonly<Record<WxrEntry['status'], string>> = {
  published: 'publish',
  scheduled: 'future',
  draft: 'draft',
  // WordPress has no archive: a post kept but hidden is `private` there; the meta below keeps the word.
  archived: 'private',
}

/** Characters XML 1.0 cannot hold at all (a post's text may, as JSON can). */
// eslint-disable-next-line no-control-regex -- these are what is removed
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g

function text (s: string): string {
  return s.replace(NOT_XML, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** A CDATA section of `s`, whatever it holds (`]]>` is split across two sections). */
function cdata (s: string): string {
  return `<![CDATA[${s.replace(NOT_XML, '').replaceAll(']]>', ']]]]><![CDATA[>')}]]>`
}

/** `YYYY-MM-DD HH:MM:SS` in UTC, as WXR writes dates; WordPress's "none" for null. */
function wpDate (iso: string | null): string {
  return iso === null ? '0000-00-00 00:00:00' : iso.slice(0, 19).replace('T', ' ')
}

function nicename (tag: string): string {
  return tag.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '') || 'tag'
}

function meta (key: string, value: string): string {
  return `\t\t<wp:postmeta>\n\t\t\t<wp:meta_key>${cdata(key)}</wp:meta_key>\n\t\t\t<wp:meta_value>${cdata(value)}</wp:meta_value>\n\t\t</wp:postmeta>\n`
}

/**
 * A WordPress eXtended RSS 1.2 file, written as a stream: `head`, an `item` per post, `tail`. It
 * has what WordPress's importer reads (Tools → Import → WordPress): each post's HTML as
 * `content:encoded`, its slug, status, dates, author login and tags. Beside them, as post meta
 * WordPress keeps but does not show, the post's Markdown (`_blog_markdown`), its date to the
 * millisecond (`_blog_date`; WXR's have seconds) and an archived post's state (`_blog_status`): this
 * service's own importer takes them back, so a file moved out and in again gives the same posts.
 */
export const wxrFormat = {
  contentType: 'application/rss+xml',
  extension: 'xml',
  head (site: string, now: Date): string {
    return `<?xml version="1.0" encoding="UTF-8" ?>
<!-- A WordPress eXtended RSS (WXR) file of the blog at ${text(site)}: import it in WordPress with Tools → Import → WordPress. -->
<rss version="2.0"
\txmlns:excerpt="http://wordpress.org/export/1.2/excerpt/"
\txmlns:content="http://purl.org/rss/1.0/modules/content/"
\txmlns:wfw="http://wellformedweb.org/CommentAPI/"
\txmlns:dc="http://purl.org/dc/elements/1.1/"
\txmlns:wp="http://wordpress.org/export/1.2/"
>
<channel>
\t<title>${text(site)}</title>
\t<link>${text(site)}</link>
\t<description></description>
\t<pubDate>${now.toUTCString().replace('GMT', '+0000')}</pubDate>
\t<language>en</language>
\t<wp:wxr_version>1.2</wp:wxr_version>
\t<wp:base_site_url>${text(site)}</wp:base_site_url>
\t<wp:base_blog_url>${text(site)}</wp:base_blog_url>
\t<generator>blog-post-service</generator>
`
  },
  item (e: WxrEntry, site: string): string {
    // The post's date: when it is to be published, or was first (a draft or archived post may have
    // been); WordPress's "none" for a post never published.
    const date = e.status === 'scheduled' ? e.publishAt : e.status === 'published' ? e.publishedAt ?? e.createdAt : e.publishedAt
    const shown = new Date(date ?? e.createdAt)
    return `\t<item>
\t\t<title>${text(e.title)}</title>
\t\t<link>${text(`${site}/posts/by-slug/${e.slug}`)}</link>
\t\t<pubDate>${shown.toUTCString().replace('GMT', '+0000')}</pubDate>
\t\t<dc:creator>${cdata(e.author)}</dc:creator>
\t\t<guid isPermaLink="false">${text(`${site}/posts/${e.id}`)}</guid>
\t\t<description></description>
\t\t<content:encoded>${cdata(e.contentHtml)}</content:encoded>
\t\t<excerpt:encoded>${cdata(e.excerpt)}</excerpt:encoded>
\t\t<wp:post_id>${e.id}</wp:post_id>
\t\t<wp:post_date>${cdata(wpDate(date ?? e.createdAt))}</wp:post_date>
\t\t<wp:post_date_gmt>${cdata(wpDate(date))}</wp:post_date_gmt>
\t\t<wp:post_modified>${cdata(wpDate(e.updatedAt))}</wp:post_modified>
\t\t<wp:post_modified_gmt>${cdata(wpDate(e.updatedAt))}</wp:post_modified_gmt>
\t\t<wp:comment_status>${cdata('closed')}</wp:comment_status>
\t\t<wp:ping_status>${cdata('closed')}</wp:ping_status>
\t\t<wp:post_name>${cdata(e.slug)}</wp:post_name>
\t\t<wp:status>${cdata(WP_STATUS[e.status])}</wp:status>
\t\t<wp:post_parent>0</wp:post_parent>
\t\t<wp:menu_order>0</wp:menu_order>
\t\t<wp:post_type>${cdata('post')}</wp:post_type>
\t\t<wp:post_password>${cdata('')}</wp:post_password>
\t\t<wp:is_sticky>0</wp:is_sticky>
${e.tags.map(t => `\t\t<category domain="post_tag" nicename="${text(nicename(t))}">${cdata(t)}</category>\n`).join('')}${meta('_blog_markdown', e.content)}${date === null ? '' : meta('_blog_date', date)}${e.status === 'archived' ? meta('_blog_status', 'archived') : ''}\t</item>
`
  },
  tail (): string {
    return '</channel>\n</rss>\n'
  },
} as const

/** WXR as a format posts are written in: each row a post, as `exportable.list` reads them. */
export const wxrWriter: FormatWriter = {
  contentType: wxrFormat.contentType,
  extension: wxrFormat.extension,
  head: (site, now) => wxrFormat.head(site, now),
  row: (row, site) => wxrFormat.item(wxrEntry(row as Post), site),
  tail: () => wxrFormat.tail(),
}
