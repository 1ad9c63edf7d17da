import type { EntryImages } from '../../../http/contract/resources.ts'
import type { SourcePost } from './entries.ts'

/** An `<img>`'s `src` (its attribute up to the value, and the value quoted either way or bare). */
const IMG_SRC = /(<img\b[^>]*?\ssrc\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi
/** A Markdown image's destination (`![alt](url "title")` or `![alt](<url>)`). */
const MD_IMAGE = /(!\[[^\]\n]*\]\(\s*)(?:<([^>\n]*)>|([^\s)]+))/g

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', quot: '"', apos: '\'', lt: '<', gt: '>' }

/** An attribute's value as a browser reads it: character references decoded. */
function decodeAttribute (s: string): string {
  return s.replace(/&(?:#x([0-9a-f]+)|#(\d+)|([a-z]+));/gi, (m, hex?: string, dec?: string, name?: string) => {
    if (name !== undefined) return ENTITIES[name.toLowerCase()] ?? m
    const cp = Number.parseInt(hex ?? dec!, hex === undefined ? 10 : 16)
    return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : m
  })
}

/** The image sources a post shows, as written (decoded), each once: its feature image first, then its content's. */
export function imageSources (post: SourcePost): string[] {
  const found = new Set<string>()
  if (post.featureImage !== null && post.featureImage.trim() !== '') found.add(post.featureImage.trim())
  if (post.html !== null) {
    for (const m of post.html.matchAll(IMG_SRC)) found.add(decodeAttribute(m[2] ?? m[3] ?? m[4]!).trim())
  } else if (post.markdown !== null) {
    for (const m of post.markdown.matchAll(MD_IMAGE)) found.add((m[2] ?? m[3]!).trim())
  }
  found.delete('')
  return [...found]
}

/** The post with each image source that `urls` maps (as written) pointing where it says, and `cover` (a media id) as its feature image when given. */
export function withImages (post: SourcePost, urls: ReadonlyMap<string, string>, cover?: string): SourcePost {
  if (urls.size === 0 && cover === undefined) return post
  const html = post.html?.replace(IMG_SRC, (m, head: string, dq?: string, sq?: string, bare?: string) => {
    const to = urls.get(decodeAttribute(dq ?? sq ?? bare!).trim())
    return to === undefined ? m : `${head}"${to}"`
  }) ?? null
  const markdown = post.markdown?.replace(MD_IMAGE, (m, head: string, angled?: string, plain?: string) => {
    const to = urls.get((angled ?? plain!).trim())
    return to === undefined ? m : `${head}${to}`
  }) ?? null
  return { ...post, html, markdown, ...(cover === undefined ? {} : { featureImageId: cover }) }
}

/** A source post's images as an import fetching them sees them: its sources, its feature image's among them. */
export const postImages: EntryImages = {
  sources: post => {
    const p = post as SourcePost
    const cover = p.featureImage?.trim() ?? ''
    return { urls: imageSources(p), cover: cover === '' ? null : cover }
  },
  withImages: (post, urls, cover) => withImages(post as SourcePost, urls, cover),
}
