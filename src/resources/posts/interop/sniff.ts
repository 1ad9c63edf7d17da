import type { Sniffed } from '../../../http/contract/resources.ts'

/** The request's declared kind: which Content-Type it came with. */
export type Declared = 'xml' | 'json'

/** Bytes after which a file still undecided is taken as what it says it is (its job then decides). */
export const SNIFF_BYTES = 64 * 1024

/**
 * Judges a file by its first bytes: `{` is JSON (a Ghost export, by its shape later), `<` XML whose
 * root must be `<rss>` (a WordPress export); a DOCTYPE before the root is refused at once. `final`:
 * these are all the bytes there are.
 */
export function sniff (head: Buffer, declared: Declared, final: boolean): Sniffed {
  let text = head.toString('latin1')
  if (text.startsWith('\xef\xbb\xbf')) text = text.slice(3)
  text = text.trimStart()
  if (text === '') return final ? { refuse: 415, reason: 'The body is empty: send the export file.' } : null
  if (text.startsWith('{')) {
    return declared === 'json' ? { source: 'ghost' } : { refuse: 415, reason: 'The body is JSON (a Ghost export?) but was declared as XML: send it as application/json.' }
  }
  if (!text.startsWith('<')) return { refuse: 415, reason: 'The body is neither XML nor JSON: it is not a WordPress export (WXR) or a Ghost export.' }
  if (declared === 'json') return { refuse: 415, reason: 'The body is XML (a WordPress export?) but was declared as JSON: send it as application/xml.' }
  // The prolog: an XML declaration, comments, processing instructions and white space, then the root.
  for (;;) {
    const prolog = /^(<\?[\s\S]*?\?>|<!--[\s\S]*?-->)\s*/.exec(text)
    if (prolog === null) break
    text = text.slice(prolog[0].length)
  }
  if (/^<!DOCTYPE/i.test(text)) return { refuse: 422, reason: 'The XML has a DOCTYPE declaration. A WordPress export has none, and this service reads no DTD and expands no entity.' }
  const root = /^<([A-Za-z_][\w.:-]*)[\s>/]/.exec(text)
  if (root !== null) {
    return root[1] === 'rss' ? { source: 'wordpress' } : { refuse: 415, reason: `The XML's root element is <${root[1]}>, not <rss>: it is not a WordPress export (WXR).` }
  }
  if (final || head.length >= SNIFF_BYTES) return { source: 'wordpress' }
  return null
}
