import MarkdownIt from 'markdown-it'
import type { ImageFacts } from '../../http/contract/resources.ts'
import { EXCERPT_DERIVED_LENGTH } from './limits.ts'

type Token = ReturnType<InstanceType<typeof MarkdownIt>['parse']>[number]

const SAFE_SCHEMES = new Set(['http', 'https', 'mailto'])

/**
 * Whether a link or image URL may stay: one without a scheme (relative, `#anchor`), or with http,
 * https or mailto. Browsers ignore ASCII white space and controls inside a scheme
 * (`java\tscript:`), so they are dropped before looking for it.
 */
export function isSafeUrl (url: string): boolean {
  // eslint-disable-next-line no-control-regex -- the controls are what is being removed
  const s = url.replace(/[\u0000-\u0020\u007f]/g, '').toLowerCase()
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(s)
  return scheme === null || SAFE_SCHEMES.has(scheme[1]!)
}

/**
 * CommonMark plus GitHub tables, strikethrough (both in markdown-it's default preset) and autolinks
 * (linkify). `html: false` escapes raw HTML instead of passing it through; `validateLink` drops links
 * and images whose URL fails isSafeUrl (markdown-it calls it after decoding entities, so
 * `jav&#x61;script:` is caught too). `maxNesting` bounds the depth hostile input can reach.
 */
const md = new MarkdownIt('default', { html: false, linkify: true, typographer: false, maxNesting: 50 })
md.validateLink = isSafeUrl

/** The plain text of a parse: the words a reader sees, Markdown syntax removed. */
function plainText (tokens: readonly Token[]): string {
  const parts: string[] = []
  const walk = (list: readonly Token[]) => {
    for (const t of list) {
      if (t.type === 'text' || t.type === 'code_inline' || t.type === 'code_block' || t.type === 'fence') parts.push(t.content)
      else if (t.type === 'softbreak' || t.type === 'hardbreak') parts.push(' ')
      if (t.children) walk(t.children)
      // Block boundaries separate words (two paragraphs, table cells).
      if (t.block) parts.push(' ')
    }
  }
  walk(tokens)
  return parts.join('').replace(/\s+/g, ' ').trim()
}

/**
 * The first `max` characters (code points) of `text`, cut back to a word boundary with `…`
 * appended when it is longer.
 */
export function shorten (text: string, max = EXCERPT_DERIVED_LENGTH): string {
  const chars = Array.from(text)
  if (chars.length <= max) return text
  let head = chars.slice(0, max).join('')
  if (chars[max] !== ' ') {
    const space = head.lastIndexOf(' ')
    if (space > 0) head = head.slice(0, space)
  }
  return `${head.trimEnd()}…`
}

export interface RenderedContent {
  /** The content as HTML, safe to show (raw HTML escaped, unsafe URLs dropped). */
  readonly html: string
  /** The excerpt a post gets when the client gives none. */
  readonly excerpt: string
}

/** The service's own images a content shows, by the URL written in it. */
export type ContentImages = ReadonlyMap<string, ImageFacts>

/** How wide a post's column is at most: the `sizes` of its images, and the width their `src` asks for. */
const COLUMN = 800
const SIZES = `(max-width: ${COLUMN}px) 100vw, ${COLUMN}px`

/** Every image URL of a content, as written (after markdown-it's decoding), for looking up the service's own. */
export function imageSources (content: string): string[] {
  const found: string[] = []
  const walk = (list: readonly Token[]) => {
    for (const t of list) {
      if (t.type === 'image') found.push(String(t.attrGet('src') ?? ''))
      if (t.children) walk(t.children)
    }
  }
  walk(md.parse(content, {}))
  return found
}

/** The `srcset` entry a browser without `srcset` gets: the narrowest at least a column wide, else the widest. */
function fallbackSrc (facts: ImageFacts): string {
  const entries = facts.srcset.split(', ').map(e => { const [url = '', w = ''] = e.split(' '); return { url, w: Number.parseInt(w, 10) } })
  return (entries.find(e => e.w >= COLUMN) ?? entries.at(-1))?.url ?? facts.url
}

const defaultImage = md.renderer.rules.image!
// An image of the service is given its variants: the browser picks the width its layout needs.
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!
  const src = String(token.attrGet('src') ?? '')
  const facts = (env as { images?: ContentImages } | undefined)?.images?.get(src)
  if (facts === undefined) return defaultImage(tokens, idx, options, env, self)
  const origin = /^https?:\/\/[^/?#]+/.exec(src)?.[0] ?? ''
  const alt = self.renderInlineAsText(token.children ?? [], options, env) || facts.alt
  const srcset = facts.srcset.split(', ').map(e => origin + e).join(', ')
  const attrs: [string, string][] = [
    ['src', origin + fallbackSrc(facts)], ['srcset', srcset], ['sizes', SIZES], ['width', String(facts.width)], ['height', String(facts.height)],
    ['loading', 'lazy'], ['decoding', 'async'], ['alt', alt],
  ]
  const title = token.attrGet('title')
  if (title !== null) attrs.push(['title', String(title)])
  return `<img ${attrs.map(([k, v]) => `${k}="${md.utils.escapeHtml(v)}"`).join(' ')}>`
}

/**
 * Renders a post's Markdown once, at write time: the HTML and the derived excerpt come from one
 * parse. `images` are the service's own images the content shows (by their URL as written): each
 * is rendered with its variants (`srcset`, `sizes`), its size, and lazy loading.
 */
export function renderContent (content: string, images?: ContentImages): RenderedContent {
  const env = images === undefined ? {} : { images }
  const tokens = md.parse(content, env)
  return { html: md.renderer.render(tokens, md.options, env), excerpt: shorten(plainText(tokens)) }
}
