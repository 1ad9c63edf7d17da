import { CANONICAL_URL_MAX, EXCERPT_DERIVED_LENGTH, EXCERPT_MAX, META_DESCRIPTION_MAX, META_TITLE_MAX, TITLE_MAX } from '../../src/resources/posts/limits.ts'
import { h, parseRendered, toLocalInput } from './dom.ts'
import { mediaImage } from './media.ts'
/** A post as the service shows it to its author (the members the editor reads). */
export interface Post {
  id: number
  title: string
  content: string
  status: string
  slug?: string
  tags?: string[]
  authors?: string[]
  excerpt?: string
  publish_at?: string | null
  published_at?: string | null
  meta_title?: string | null
  meta_description?: string | null
  canonical_url?: string | null
  feature_image?: FeatureImage | null
  updated_at: string
}

export interface FeatureImage { id: string, url?: string, alt?: string | null }

export const STATUSES = ['draft', 'scheduled', 'published', 'archived']

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement

/**
 * A post's fields that are one control holding text, each listed once: its label and hint, its
 * control, and the form's text for it from a post. The editor makes, fills, reads and marks them
 * from this table; tags, authors, the content and the feature image have controls of their own.
 */
export const TEXT_FIELDS = [
  { key: 'title', label: 'Title', of: (p: Post) => p.title, control: () => h('input', { type: 'text', required: true, maxlength: TITLE_MAX }) },
  {
    key: 'slug',
    label: 'Slug',
    hint: 'Lower-case letters, digits and dashes. Empty: made from the title.',
    of: (p: Post) => p.slug ?? '',
    control: () => h('input', { type: 'text', pattern: '[a-z0-9]+(-[a-z0-9]+)*', maxlength: 100, spellcheck: 'false', autocapitalize: 'none' }),
  },
  { key: 'status', label: 'Status', of: (p: Post) => p.status, control: () => h('select', {}, ...STATUSES.map(s => h('option', { value: s }, s))) },
  {
    key: 'publish_at',
    label: 'Publish at',
    hint: 'With status scheduled: when the post goes out (your local time).',
    of: (p: Post) => toLocalInput(p.publish_at),
    control: () => h('input', { type: 'datetime-local', step: 1 }),
  },
  { key: 'excerpt', label: 'Excerpt', hint: 'Empty: the beginning of the content.', of: (p: Post) => p.excerpt ?? '', control: () => h('textarea', { rows: 3, maxlength: EXCERPT_MAX }) },
  { key: 'meta_title', label: 'Meta title', of: (p: Post) => p.meta_title ?? '', control: () => h('input', { type: 'text', maxlength: META_TITLE_MAX }) },
  { key: 'meta_description', label: 'Meta description', of: (p: Post) => p.meta_description ?? '', control: () => h('textarea', { rows: 2, maxlength: META_DESCRIPTION_MAX }) },
  { key: 'canonical_url', label: 'Canonical URL', of: (p: Post) => p.canonical_url ?? '', control: () => h('input', { type: 'url', maxlength: CANONICAL_URL_MAX, inputmode: 'url' }) },
] as const satisfies readonly { key: string, label: string, hint?: string, of: (p: Post) => string, control: () => Control }[]

export type TextKey = typeof TEXT_FIELDS[number]['key']

/** What the writer edits, as the form holds it. */
export type Values = Record<TextKey, string> & {
  tags: string[]
  authors: string[]
  content: string
  feature_image: FeatureImage | null
}

/** The form's values for a post as the service shows it. */
export function valuesOf (p: Post): Values {
  const text = Object.fromEntries(TEXT_FIELDS.map(f => [f.key, f.of(p)])) as Record<TextKey, string>
  const image = p.feature_image
  return {
    ...text,
    tags: p.tags ?? [],
    authors: p.authors ?? [],
    content: p.content,
    feature_image: image == null ? null : { id: image.id, url: image.url ?? mediaImage(image.id, 640), alt: image.alt ?? '' },
  }
}

export const SEO_FIELDS = ['meta_title', 'meta_description', 'canonical_url'] as const

export function sameValues (a: Values, b: Values): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/**
 * The excerpt the service derives from content (its first EXCERPT_DERIVED_LENGTH characters of plain text, cut at a
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
  if (chars.length <= EXCERPT_DERIVED_LENGTH) return text
  let head = chars.slice(0, EXCERPT_DERIVED_LENGTH).join('')
  if (chars[EXCERPT_DERIVED_LENGTH] !== ' ') {
    const space = head.lastIndexOf(' ')
    if (space > 0) head = head.slice(0, space)
  }
  return `${head.trimEnd()}…`
}
