import gfmPlugins from '@joplin/turndown-plugin-gfm'
import TurndownService from 'turndown'

/** Elements whose content is no reader's text: they go with everything inside them. */
const DROPPED = ['script', 'style', 'iframe', 'noscript', 'object', 'embed', 'applet', 'frame', 'frameset', 'template', 'form', 'input', 'button', 'select', 'textarea'] as const

/** A URL without a scheme, or with http, https or mailto (what a post's Markdown may link to). */
function safeUrl (url: string | null): boolean {
  // eslint-disable-next-line no-control-regex -- browsers ignore these inside a scheme (`java\tscript:`)
  const s = (url ?? '').replace(/[\u0000-\u0020\u007f]/g, '').toLowerCase()
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(s)
  return scheme === null || ['http', 'https', 'mailto'].includes(scheme[1]!)
}

const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-', emDelimiter: '_' })
turndown.use(gfmPlugins.gfm)
turndown.remove([...DROPPED])
// A link the content's rules would drop keeps its words; an image with such a source goes.
turndown.addRule('unsafe-link', {
  filter: node => node.nodeName === 'A' && node.getAttribute('href') !== null && !safeUrl(node.getAttribute('href')),
  replacement: content => content,
})
turndown.addRule('unsafe-image', {
  filter: node => node.nodeName === 'IMG' && !safeUrl(node.getAttribute('src')),
  replacement: () => '',
})

const BLOCK = /^<(p|div|h[1-6]|ul|ol|li|dl|table|blockquote|pre|figure|hr|section|article|aside|header|footer|!--)[\s>/]/i

/**
 * WordPress keeps classic-editor content without paragraphs: a blank line is a paragraph break and
 * a line break a `<br>` (what its `wpautop` adds when it shows a post). Content with `<pre>` is left
 * as it is: its blank lines are its own.
 */
export function paragraphs (html: string): string {
  if (!/\n\s*\n/.test(html) || /<pre[\s>]/i.test(html)) return html
  return html.split(/\n\s*\n/).map(p => p.trim()).filter(p => p !== '')
    .map(p => BLOCK.test(p) ? p : `<p>${p.replace(/\n/g, '<br>\n')}</p>`)
    .join('\n')
}

/** HTML as Markdown (CommonMark with GitHub tables and strikethrough), without scripts, frames or unsafe links. */
export function toMarkdown (html: string): string {
  return turndown.turndown(html).trim()
}
