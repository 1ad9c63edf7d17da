import { parseRendered } from './dom.ts'
/** A post as the service shows it to its author (the members the editor reads). */
export interface Post {
  id: number
  title: string
  content: string
  status: string
  slug?: string
  tags?: string[]
  excerpt?: string
  publish_at?: string | null
  meta_title?: string | null
  meta_description?: string | null
  canonical_url?: string | null
  feature_image?: FeatureImage | null
  updated_at: string
}

export interface FeatureImage { id: string, url?: string, alt?: string | null }

/** What the writer edits, as the form holds it. */
export interface Values {
  title: string
  slug: string
  status: string
  publish_at: string
  tags: string[]
  excerpt: string
  meta_title: string
  meta_description: string
  canonical_url: string
  content: string
  feature_image: FeatureImage | null
}

export const SEO_FIELDS = ['meta_title', 'meta_description', 'canonical_url'] as const

export function sameValues (a: Values, b: Values): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** Where a media's image is shown at a width (the service makes and keeps each variant). */
export function mediaImage (id: string, width: number): string {
  return `/media/${encodeURIComponent(id)}/image?w=${width}`
}

/**
 * The excerpt the service derives from content (its first 200 characters of plain text, cut at a
 * word, `…` appended), read from the content's HTML as the service renders it. It tells a derived
 * excerpt from one a writer gave: a derived one is left empty in the form, so that it follows the
 * content when saved.
 */
export function derivedExcerpt (html: string): string {
  const doc = parseRendered(html)
  const parts: string[] = []
  const block = /^(P|H[1-6]|LI|UL|OL|BLOCKQUOTE|PRE|TABLE|THEAD|TBODY|TR|TH|TD|HR)$/
  const walk = (node: Node) => {
    for (const child of Array.from(node.childNodes)) {
      if (child.nodeType === Node.TEXT_NODE) parts.push((child as Text).data)
      else if (child instanceof HTMLImageElement) parts.push(child.alt)
      else if (child instanceof HTMLBRElement) parts.push(' ')
      else walk(child)
      if (child instanceof Element && block.test(child.tagName)) parts.push(' ')
    }
  }
  walk(doc.body)
  const text = parts.join('').replace(/\s+/g, ' ').trim()
  const chars = Array.from(text)
  if (chars.length <= 200) return text
  let head = chars.slice(0, 200).join('')
  if (chars[200] !== ' ') {
    const space = head.lastIndexOf(' ')
    if (space > 0) head = head.slice(0, space)
  }
  return `${head.trimEnd()}…`
}
