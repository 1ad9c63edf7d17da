import { XMLBuilder } from 'fast-xml-parser'
import type { PublishedPost } from './store.ts'

export const SITEMAP_MEDIA_TYPE = 'application/xml; charset=utf-8'
const NS = 'http://www.sitemaps.org/schemas/sitemap/0.9'

/** The builder escapes every text and attribute value; no user text is concatenated into XML here. */
const xml = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@', suppressEmptyNode: true, processEntities: true })

const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'

/**
 * A document's first and last bytes around its entries: the builder makes the root element
 * with a marker child, and the marker is where the entries go.
 */
function wrapper (root: string, attributes: Record<string, string>): { open: string, close: string } {
  const whole = xml.build({ [root]: { ...attributes, marker: '' } }) as string
  const [open, close] = whole.split('<marker/>') as [string, string]
  return { open: DECLARATION + open, close }
}

// An image entry per post (the feature image) needs `xmlns:image` here and an `image:image` member
// in urlEntry: `'image:image': { 'image:loc': url }`.
const URLSET = wrapper('urlset', { '@xmlns': NS })
const INDEX = wrapper('sitemapindex', { '@xmlns': NS })

/** One `<url>`: the post's public URL (as the feeds give it) and when it last changed. */
export function urlEntry (baseUrl: string, post: PublishedPost): string {
  return xml.build({ url: { loc: `${baseUrl}/posts/by-slug/${post.slug}`, lastmod: post.updatedAt } }) as string
}

/**
 * A `urlset` of the posts `pages` yields, page by page: the document is made as it is sent, so
 * memory holds one page whatever the number of posts.
 */
export async function * urlset (baseUrl: string, pages: AsyncIterable<readonly PublishedPost[]>): AsyncGenerator<string> {
  yield URLSET.open
  for await (const page of pages) yield page.map(p => urlEntry(baseUrl, p)).join('')
  yield URLSET.close
}

/** A `sitemapindex` of `parts` parts, `/sitemap-posts-1.xml` … */
export function * sitemapIndex (baseUrl: string, parts: number): Generator<string> {
  yield INDEX.open
  for (let n = 1; n <= parts; n++) yield xml.build({ sitemap: { loc: `${baseUrl}/sitemap-posts-${n}.xml` } }) as string
  yield INDEX.close
}
