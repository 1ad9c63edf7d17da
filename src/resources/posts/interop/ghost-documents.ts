import MarkdownIt from 'markdown-it'

/**
 * Ghost's editor documents as HTML, for the import's HTML → Markdown step: Lexical (Ghost 5 and
 * later, `posts.lexical`) and mobiledoc (Ghost 1 to 4, `posts.mobiledoc`), read by walking their
 * documented node trees. What has no HTML of its own here (a signup form, a paywall, a product
 * card …) is left out and named in `warnings`, once per kind.
 */
export interface GhostDocument {
  readonly html: string
  readonly warnings: readonly string[]
}

type Node = Record<string, unknown>

const markdown = new MarkdownIt({ html: true, linkify: false })

function escape (s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

function text (v: unknown): string {
  return typeof v === 'string' ? v : ''
}

function children (node: Node): Node[] {
  return Array.isArray(node.children) ? node.children.filter((c): c is Node => c !== null && typeof c === 'object') : []
}

function attr (name: string, value: string): string {
  return value === '' ? '' : ` ${name}="${escape(value)}"`
}

/** A figure of an image, with its caption (HTML in Ghost's documents) when it has one. */
function figure (src: string, alt: string, title: string, caption: string, href = ''): string {
  if (src === '') return ''
  const img = `<img src="${escape(src)}"${attr('alt', alt)}${attr('title', title)}>`
  const linked = href === '' ? img : `<a href="${escape(href)}">${img}</a>`
  return `<figure>${linked}${caption === '' ? '' : `<figcaption>${caption}</figcaption>`}</figure>`
}

function codeBlock (code: string, language: string): string {
  return `<pre><code${attr('class', language === '' ? '' : `language-${language}`)}>${escape(code)}</code></pre>`
}

/** Cards both editors share, by name and payload; null: no HTML for it here. */
function card (name: string, p: Node): string | null {
  switch (name) {
    case 'image':
      return figure(text(p.src), text(p.alt), text(p.title), text(p.caption), text(p.href))
    case 'gallery':
      return Array.isArray(p.images) ? (p.images as Node[]).map(i => figure(text(i.src), text(i.alt), text(i.title), text(i.caption))).join('') + (text(p.caption) === '' ? '' : `<p>${text(p.caption)}</p>`) : ''
    case 'markdown':
    case 'card-markdown':
      return markdown.render(text(p.markdown))
    case 'html':
      return text(p.html)
    case 'code':
    case 'codeblock':
      return codeBlock(text(p.code), text(p.language)) + (text(p.caption) === '' ? '' : `<p>${text(p.caption)}</p>`)
    case 'hr':
    case 'horizontalrule':
      return '<hr>'
    case 'embed':
      // The embed's own HTML is a frame or a script (dropped by the import's rules): its address stays as a link.
      return text(p.url) === '' ? '' : `<p><a href="${escape(text(p.url))}">${escape(text(p.url))}</a></p>${text(p.caption) === '' ? '' : `<p>${text(p.caption)}</p>`}`
    case 'bookmark': {
      const url = text(p.url)
      const meta = (p.metadata ?? {}) as Node
      const title = text(meta.title) || url
      return url === '' ? '' : `<p><a href="${escape(url)}">${escape(title)}</a></p>`
    }
    case 'callout':
      return `<blockquote><p>${text(p.calloutEmoji) === '' ? '' : `${escape(text(p.calloutEmoji))} `}${text(p.calloutText)}</p></blockquote>`
    case 'toggle':
      return `<p><strong>${text(p.heading)}</strong></p>${text(p.content)}`
    case 'button':
      return text(p.buttonUrl) === '' ? '' : `<p><a href="${escape(text(p.buttonUrl))}">${escape(text(p.buttonText) || text(p.buttonUrl))}</a></p>`
    default:
      return null
  }
}

/** Lexical's text format bits, outermost first, as HTML elements. */
const FORMATS: ReadonlyArray<readonly [number, string]> = [[1, 'strong'], [2, 'em'], [4, 's'], [8, 'u'], [16, 'code'], [32, 'sub'], [64, 'sup']]

function lexicalText (node: Node): string {
  let html = escape(text(node.text))
  const format = typeof node.format === 'number' ? node.format : 0
  for (const [bit, tag] of [...FORMATS].reverse()) if ((format & bit) !== 0) html = `<${tag}>${html}</${tag}>`
  return html
}

const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'])

/** A Lexical document (Ghost's `posts.lexical`, a JSON text) as HTML. */
export function lexicalHtml (json: string): GhostDocument {
  const unknown = new Set<string>()
  const walk = (node: Node): string => {
    const type = text(node.type)
    const inner = () => children(node).map(walk).join('')
    switch (type) {
      case 'root':
        return inner()
      case 'text':
      case 'extended-text':
        return lexicalText(node)
      case 'linebreak':
        return '<br>'
      case 'tab':
        return ' '
      case 'paragraph':
        return `<p>${inner()}</p>`
      case 'heading':
      case 'extended-heading': {
        const tag = HEADINGS.has(text(node.tag)) ? text(node.tag) : 'h2'
        return `<${tag}>${inner()}</${tag}>`
      }
      case 'quote':
      case 'extended-quote':
      case 'aside':
        return `<blockquote>${inner()}</blockquote>`
      case 'link':
      case 'autolink':
        return `<a href="${escape(text(node.url))}">${inner()}</a>`
      case 'list': {
        const tag = node.listType === 'number' || node.tag === 'ol' ? 'ol' : 'ul'
        const start = tag === 'ol' && typeof node.start === 'number' && node.start !== 1 ? ` start="${node.start}"` : ''
        return `<${tag}${start}>${inner()}</${tag}>`
      }
      case 'listitem': {
        const check = typeof node.checked === 'boolean' ? `[${node.checked ? 'x' : ' '}] ` : ''
        return `<li>${check}${inner()}</li>`
      }
      default: {
        const html = card(type, node)
        if (html !== null) return html
        if (children(node).length > 0) return inner()
        unknown.add(type === '' ? '(no type)' : type)
        return ''
      }
    }
  }
  const doc = JSON.parse(json) as unknown
  const root = doc !== null && typeof doc === 'object' ? (doc as Node).root : undefined
  if (root === null || typeof root !== 'object') throw new SyntaxError('it has no root node')
  return { html: children(root as Node).map(walk).join(''), warnings: [...unknown].map(t => leftOut('Lexical', t)) }
}

function leftOut (format: string, kind: string): string {
  return `Its ${format} document has a "${kind}" card or node this service cannot show; it was left out.`
}

type Marker = [number, number[], number, unknown]

/** A mobiledoc document (Ghost 1 to 4, `posts.mobiledoc`, a JSON text, version 0.3) as HTML. */
export function mobiledocHtml (json: string): GhostDocument {
  const doc = JSON.parse(json) as Node
  if (doc === null || typeof doc !== 'object' || !Array.isArray(doc.sections)) throw new SyntaxError('it has no sections')
  const markups = (Array.isArray(doc.markups) ? doc.markups : []) as [string, string[]?][]
  const atoms = (Array.isArray(doc.atoms) ? doc.atoms : []) as [string, string, Node][]
  const cards = (Array.isArray(doc.cards) ? doc.cards : []) as [string, Node][]
  const unknown = new Set<string>()

  const markers = (list: unknown): string => {
    let html = ''
    const open: string[] = []
    for (const m of (Array.isArray(list) ? list : []) as Marker[]) {
      const [kind, opens, closes, value] = m
      for (const i of Array.isArray(opens) ? opens : []) {
        const [tag, attrs = []] = markups[i] ?? ['span']
        const tagName = /^[a-z][a-z0-9]*$/i.test(tag) ? tag.toLowerCase() : 'span'
        let a = ''
        for (let k = 0; k + 1 < attrs.length; k += 2) if (/^[a-z-]+$/i.test(attrs[k]!)) a += ` ${attrs[k]}="${escape(String(attrs[k + 1]))}"`
        html += `<${tagName}${a}>`
        open.push(tagName)
      }
      if (kind === 1) {
        const [name, value2] = atoms[Number(value)] ?? ['', '']
        html += name === 'soft-return' ? '<br>' : escape(text(value2))
      } else {
        html += escape(text(value))
      }
      for (let k = 0; k < (typeof closes === 'number' ? closes : 0); k++) html += `</${open.pop() ?? 'span'}>`
    }
    while (open.length > 0) html += `</${open.pop()}>`
    return html
  }

  const section = (s: unknown[]): string => {
    const [kind] = s
    if (kind === 1) {
      const tag = String(s[1]).toLowerCase()
      const name = tag === 'pull-quote' || tag === 'aside' ? 'blockquote' : HEADINGS.has(tag) || tag === 'blockquote' ? tag : 'p'
      return `<${name}>${markers(s[2])}</${name}>`
    }
    if (kind === 2) return figure(text(s[1]), '', '', '')
    if (kind === 3) {
      const tag = s[1] === 'ol' ? 'ol' : 'ul'
      return `<${tag}>${(Array.isArray(s[2]) ? s[2] : []).map(item => `<li>${markers(item)}</li>`).join('')}</${tag}>`
    }
    if (kind === 10) {
      const [name, payload] = cards[Number(s[1])] ?? ['', {}]
      const html = card(name, payload ?? {})
      if (html !== null) return html
      unknown.add(name === '' ? '(no name)' : name)
      return ''
    }
    return ''
  }

  return { html: (doc.sections as unknown[][]).map(s => Array.isArray(s) ? section(s) : '').join(''), warnings: [...unknown].map(t => leftOut('mobiledoc', t)) }
}
