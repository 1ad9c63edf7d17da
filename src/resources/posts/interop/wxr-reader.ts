import { setImmediate as nextTurn } from 'node:timers/promises'
import { SaxesParser, type SaxesTagPlain } from 'saxes'
import { type FormatReader, UnreadableFile } from '../../../http/contract/resources.ts'
import type { Entry, NotPosts, SourcePost } from './entries.ts'
import { clean } from './text.ts'

/** A field longer than this (in characters) is not kept: its item is skipped, and memory stays bounded. */
export const FIELD_MAX_CHARS = 4 * 1024 * 1024

const KNOWN_VERSIONS = new Set(['1.0', '1.1', '1.2'])
/** Characters parsed in one turn of the event loop. */
const PIECE_CHARS = 16 * 1024

/** The item's children this reader keeps, by element name. */
const ITEM_FIELDS = new Set([
  'title', 'link', 'guid', 'dc:creator', 'content:encoded', 'excerpt:encoded', 'wp:post_id', 'wp:post_date',
  'wp:post_date_gmt', 'pubDate', 'wp:post_name', 'wp:status', 'wp:post_type', 'category', 'wp:attachment_url',
])
const META_FIELDS = new Set(['wp:meta_key', 'wp:meta_value'])

const OTHER_TYPES: Readonly<Record<string, NotPosts>> = { page: 'pages', attachment: 'attachments', nav_menu_item: 'menu_items' }

interface ItemState {
  fields: Map<string, string>
  categories: { domain: string, name: string }[]
  meta: { key: string, value: string }[]
  metaKey: string | null
  metaValue: string | null
  comments: number
  oversize: boolean
}

/** `YYYY-MM-DD HH:MM:SS` (WordPress's GMT dates), `0000-00-00 00:00:00` meaning none. */
function wpDate (text: string | undefined): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/.exec((text ?? '').trim())
  if (m === null || (m[1] === '0000' && m[2] === '00')) return null
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[]
  const date = new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, s!))
  // A date JavaScript rolled over (month 13, day 32) is not the one written.
  if (date.getUTCMonth() !== mo! - 1 || date.getUTCDate() !== d) return null
  date.setUTCFullYear(y!)
  return date
}

function postOf (item: ItemState, attachments: ReadonlyMap<string, string>): SourcePost {
  const f = item.fields
  const metas = (key: string) => item.meta.filter(m => m.key === key).map(m => m.value)
  const markdown = metas('_blog_markdown')[0] ?? null
  const ownStatus = metas('_blog_status')[0]
  const dateText = [f.get('wp:post_date_gmt'), f.get('wp:post_date'), f.get('pubDate')].find(d => d !== undefined && d.trim() !== '' && !d.startsWith('0000-00-00')) ?? null
  const gmt = wpDate(f.get('wp:post_date_gmt'))
  const own = metas('_blog_date')[0]
  // This service's own file says the date exactly, or that there is none.
  const date = markdown !== null
    ? (own === undefined ? null : validDate(Date.parse(own)))
    : gmt ?? wpDate(f.get('wp:post_date')) ?? (dateText !== null && f.get('pubDate') === dateText ? validDate(Date.parse(dateText)) : null)
  return {
    title: f.get('title') ?? '',
    html: markdown === null ? (f.get('content:encoded') ?? '') : null,
    markdown,
    status: ownStatus ?? f.get('wp:status') ?? 'publish',
    dateText: markdown !== null ? own ?? null : dateText,
    date,
    author: f.get('dc:creator')?.trim() || null,
    tags: item.categories.filter(c => c.domain === 'category' || c.domain === 'post_tag').map(c => c.name),
    excerpt: f.get('excerpt:encoded') ?? null,
    slug: f.get('wp:post_name') ?? null,
    permalink: f.get('link') ?? null,
    oldSlugs: metas('_wp_old_slug'),
    // Its feature image is an attachment (an item of its own), named by id.
    featureImage: attachments.get((metas('_thumbnail_id')[0] ?? '').trim()) ?? null,
    oversize: item.oversize,
  }
}

function validDate (ms: number): Date | null {
  return Number.isNaN(ms) ? null : new Date(ms)
}

/** The namespace every WXR version declares for its `wp:` elements (1.0, 1.1, 1.2). */
const WXR_NAMESPACE = /^https?:\/\/wordpress\.org\/export\/\d+\.\d+\/?$/
/** An RSS feed is no export: without WordPress's namespace its items hold no posts to import. */
const NOT_WXR_FEED = 'Its <rss> element does not declare WordPress\'s export namespace (xmlns:wp="http://wordpress.org/export/1.2/"): the file is an RSS feed, not a WordPress export (WXR).'

/**
 * Reads a WordPress export (WXR) as a stream with saxes: memory holds one item, whatever the file's
 * size. No DTD is read and no entity but XML's five is known: a DOCTYPE fails the import at once (a
 * WordPress export has none; entity tricks such as billion laughs or an external entity need one),
 * and an unknown entity is a well-formedness error. An error once items were read ends the reading
 * with a warning (what came before stays imported); before that, the file is not a WXR.
 *
 * `attachments` gathers the URL of each attachment read, by its id: a post's feature image is found
 * there (an attachment that comes after its post is found by a reading that a first one filled).
 */
export async function * readWxr (text: AsyncIterable<string>, attachments = new Map<string, string>()): AsyncGenerator<Entry> {
  const parser = new SaxesParser({ xmlns: false, position: true })
  const out: Entry[] = []
  const stack: string[] = []
  let failure: string | null = null
  let xmlError: string | null = null
  let version: string | null = null
  let channel = false
  let items = 0
  let item: ItemState | null = null
  let capture: string[] | null = null
  let captured = 0
  let category: { domain: string } | null = null
  const stopped = () => failure !== null || xmlError !== null

  parser.on('doctype', () => {
    failure ??= 'The file has a DOCTYPE declaration. A WordPress export has none, and this service reads no DTD and expands no entity (billion laughs, external entities): the file was refused.'
  })
  parser.on('error', err => { xmlError ??= err.message })
  parser.on('opentag', (tag: SaxesTagPlain) => {
    if (stopped()) return
    const name = tag.name
    stack.push(name)
    const depth = stack.length
    if (depth === 1 && name !== 'rss') failure = `Its root element is <${name}>, not <rss>: the file is not a WordPress export (WXR).`
    else if (depth === 1 && !WXR_NAMESPACE.test(String(tag.attributes['xmlns:wp'] ?? ''))) failure ??= NOT_WXR_FEED
    else if (depth === 2 && name === 'channel') channel = true
    else if (depth === 3 && name === 'wp:wxr_version') capture = []
    else if (depth === 3 && name === 'wp:author') out.push({ kind: 'other', what: 'users', count: 1 })
    else if (depth === 3 && name === 'item') {
      item = { fields: new Map(), categories: [], meta: [], metaKey: null, metaValue: null, comments: 0, oversize: false }
    } else if (item !== null && depth === 4) {
      if (name === 'wp:comment') item.comments++
      if (ITEM_FIELDS.has(name)) capture = []
      if (name === 'category') category = { domain: String(tag.attributes.domain ?? '') }
    } else if (item !== null && depth === 5 && stack[3] === 'wp:postmeta' && META_FIELDS.has(name)) capture = []
    captured = 0
  })
  const onText = (t: string) => {
    if (capture === null || stopped()) return
    captured += t.length
    if (captured > FIELD_MAX_CHARS) {
      if (item !== null) item.oversize = true
      capture = []
      return
    }
    capture.push(t)
  }
  parser.on('text', onText)
  parser.on('cdata', onText)
  parser.on('closetag', () => {
    if (stopped()) return
    const name = stack.pop()!
    const depth = stack.length + 1
    const value = capture === null ? null : clean(capture.join(''))
    capture = null
    if (depth === 3 && name === 'wp:wxr_version') version = (value ?? '').trim()
    else if (item !== null && depth === 4 && name === 'category') {
      if (value !== null && category !== null) item.categories.push({ domain: category.domain, name: value })
      category = null
    } else if (item !== null && depth === 4 && name === 'wp:postmeta') {
      if (item.metaKey !== null) item.meta.push({ key: item.metaKey, value: item.metaValue ?? '' })
      item.metaKey = item.metaValue = null
    } else if (item !== null && depth === 4 && value !== null) item.fields.set(name, value)
    else if (item !== null && depth === 5 && value !== null) {
      if (name === 'wp:meta_key') item.metaKey = value.trim()
      else item.metaValue = value
    } else if (item !== null && depth === 3 && name === 'item') {
      items++
      out.push(...entriesOf(item, attachments))
      item = null
    }
  })

  for await (const chunk of text) {
    // A stretch is parsed in pieces, each in a turn of the event loop of its own: parsing a whole
    // stretch at once held requests up for tens of milliseconds.
    for (let at = 0; at < chunk.length; at += PIECE_CHARS) {
      parser.write(chunk.slice(at, at + PIECE_CHARS))
      if (failure !== null) throw new UnreadableFile(failure)
      yield * out.splice(0)
      if (stopped()) break
      await nextTurn()
    }
    if (xmlError !== null) break
  }
  if (xmlError === null) parser.close()
  if (failure !== null) throw new UnreadableFile(failure)
  yield * out.splice(0)
  if (!channel) {
    throw new UnreadableFile(xmlError !== null
      ? `The file is not well-formed XML (${xmlError}): it is not a WordPress export (WXR).`
      : 'The file has no <channel> in an <rss> element: it is not a WordPress export (WXR).')
  }
  if (xmlError !== null) {
    yield { kind: 'warning', item: 'file', message: `The XML is not well-formed from here on (${xmlError}); nothing after it was read. The ${items} items before it were.` }
  }
  if (version === null) yield { kind: 'warning', item: 'file', message: 'The file names no wp:wxr_version; it was read as WXR 1.2.' }
  else if (!KNOWN_VERSIONS.has(version)) yield { kind: 'warning', item: 'file', message: `WXR version "${version}" is not one this service knows (1.0, 1.1, 1.2); the file was read as WXR 1.2.` }
}

function entriesOf (item: ItemState, attachments: Map<string, string>): Entry[] {
  const f = item.fields
  const out: Entry[] = []
  if (item.comments > 0) out.push({ kind: 'other', what: 'comments', count: item.comments })
  const type = (f.get('wp:post_type') ?? 'post').trim()
  const url = f.get('wp:attachment_url')?.trim()
  if (type === 'attachment' && url !== undefined && url !== '') attachments.set((f.get('wp:post_id') ?? '').trim(), url)
  if (type !== 'post') {
    out.push({ kind: 'other', what: OTHER_TYPES[type] ?? 'other', count: 1 })
    return out
  }
  const id = (f.get('wp:post_id') ?? '').trim()
  const guid = (f.get('guid') ?? '').trim()
  const title = (f.get('title') ?? '').trim()
  // The source identity (WXR guid and wp:post_id): the same post of the same site in any of its exports.
  const key = `${id}|${guid}`
  out.push({ kind: 'item', key, label: `post ${id === '' ? '?' : id}${title === '' ? '' : ` "${title.slice(0, 80)}"`}`, source: postOf(item, attachments) })
  return out
}

/**
 * WordPress's export files as a kind of file posts read: one reading of the file. When the run
 * fetches the posts' images, a reading aside first gathers the attachments: a post names its
 * feature image by the id of an attachment, which may come after it.
 */
export const wxrReader: FormatReader = {
  passes: 1,
  async * read (file, { images, signal }) {
    const attachments = new Map<string, string>()
    if (images) {
      try {
        for await (const entry of readWxr(file.open({ noted: false, counted: false }), attachments)) {
          if (entry.kind === 'item') signal.throwIfAborted()
        }
      } catch (err) {
        // The reading that follows reports what is wrong with the file.
        if (!(err instanceof UnreadableFile)) throw err
      }
    }
    yield * readWxr(file.open({ noted: true, counted: true }), attachments)
  },
}
