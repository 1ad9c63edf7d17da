import { XMLBuilder } from 'fast-xml-parser'
import type { PublishedPost } from '../store.ts'
import type { PublicUrls } from './public-urls.ts'

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

/** Google's image extension: a post's feature image as an `<image:image>` of its `<url>`. */
const IMAGE_NS = 'http://www.google.com/schemas/sitemap-image/1.1'
const URLSET = wrapper('urlset', { '@xmlns': NS, '@xmlns:image': IMAGE_NS })
const INDEX = wrapper('sitemapindex', { '@xmlns': NS })

/** One `<url>`: the post's public URL (as the feeds give it), when it last changed, and its feature image. */
export function urlEntry (baseUrl: string, urls: PublicUrls, post: PublishedPost): string {
  const image = post.image === null ? {} : { 'image:image': { 'image:loc': `${baseUrl}${post.image}` } }
  return xml.build({ url: { loc: urls.post(post.slug), lastmod: post.updatedAt, ...image } }) as string
}

/**
 * A `urlset` of the posts `pages` yields, page by page: the document is made as it is sent, so
 * memory holds one page whatever the number of posts.
 */
export async function * urlset (baseUrl: string, urls: PublicUrls, pages: AsyncIterable<readonly PublishedPost[]>): AsyncGenerator<string> {
  yield URLSET.open
  for await (const page of pages) yield page.map(p => urlEntry(baseUrl, urls, p)).join('')
  yield URLSET.close
}

/** A `sitemapindex` of `parts` parts, `/sitemap-posts-1.xml` … */
export function * sitemapIndex (baseUrl: string, parts: number): Generator<string> {
  yield INDEX.open
  for (let n = 1; n <= parts; n++) yield xml.build({ sitemap: { loc: `${baseUrl}/sitemap-posts-${n}.xml` } }) as string
  yield INDEX.close
}
