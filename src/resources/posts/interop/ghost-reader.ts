import { none } from 'stream-chain/defs.js'
import Assembler from 'stream-json/core/assembler.js'
import parser, { type Token } from 'stream-json/core/parser.js'
import { type FormatReader, UnreadableFile } from '../../../http/contract/resources.ts'
import type { Entry, SourcePost } from './entries.ts'
import { type GhostDocument, lexicalHtml, mobiledocHtml } from './ghost-documents.ts'
import { clean } from './text.ts'

/** Ghost's majors this reader was written against; a later one is read by its shape, with a warning. */
const KNOWN_MAJOR = 6

interface Frame { readonly array: boolean, readonly name: string | number, key: string, index: number }

/**
 * The elements of a Ghost export's tables (`db[i].data.<table>[j]`, or `data.<table>[j]` in the flat
 * form Ghost also reads) and its `meta`, streamed with stream-json: a table in `assemble` yields
 * each element as a value, one in `count` yields it without building it. Memory holds one element.
 */
async function * tables (text: AsyncIterable<string>, assemble: ReadonlySet<string>, count: ReadonlySet<string>): AsyncGenerator<{ table: string, value?: unknown }> {
  // The parser's stage is typed for stream-chain's use; called directly it answers each chunk (and the
  // final `none`, which flushes it) with an async iterable of tokens.
  const parse = parser({ packValues: true, streamValues: false }) as unknown as (chunk: string | typeof none) => AsyncIterable<Token>
  const frames: Frame[] = []
  let asm: Assembler | null = null
  let asmTable = ''
  const tableOf = (): string | null => {
    const path = [...frames.slice(1).map(f => f.name), nameInParent()]
    const tail = path[0] === 'db' && typeof path[1] === 'number' ? path.slice(2) : path
    if (tail.length === 1 && tail[0] === 'meta') return 'meta'
    if (tail.length === 3 && tail[0] === 'data' && typeof tail[1] === 'string' && typeof tail[2] === 'number') return tail[1]
    return null
  }
  const nameInParent = (): string | number => {
    const top = frames.at(-1)
    return top === undefined ? '' : top.array ? top.index : top.key
  }
  const valueEnded = () => {
    const top = frames.at(-1)
    if (top?.array === true) top.index++
  }
  async function * feed (chunk: string | typeof none): AsyncGenerator<{ table: string, value?: unknown }> {
    for await (const token of parse(chunk)) {
      if (asm !== null) {
        asm.consume(token)
        if (asm.done) {
          yield { table: asmTable, value: asm.current }
          asm = null
          valueEnded()
        }
        continue
      }
      switch (token.name) {
        case 'keyValue':
          frames.at(-1)!.key = token.value
          break
        case 'startObject':
        case 'startArray': {
          const table = frames.length === 0 ? null : tableOf()
          if (table !== null && (assemble.has(table) || table === 'meta')) {
            asm = new Assembler()
            asmTable = table
            asm.consume(token)
            break
          }
          if (table !== null && count.has(table)) yield { table }
          frames.push({ array: token.name === 'startArray', name: nameInParent(), key: '', index: 0 })
          break
        }
        case 'endObject':
        case 'endArray':
          frames.pop()
          valueEnded()
          break
        case 'stringValue':
        case 'numberValue':
        case 'nullValue':
        case 'trueValue':
        case 'falseValue':
          valueEnded()
          break
        default:
      }
    }
  }
  try {
    for await (const chunk of text) yield * feed(chunk)
    yield * feed(none)
  } catch (err) {
    if (err instanceof UnreadableFile) throw err
    throw new UnreadableFile(`The file is not valid JSON (${(err as Error).message}): it is not a Ghost export.`)
  }
}

type Row = Record<string, unknown>

function str (v: unknown): string | null {
  return typeof v === 'string' ? clean(v) : typeof v === 'number' ? String(v) : null
}

function byOrder (a: Row, b: Row): number {
  return Number(a.sort_order ?? 0) - Number(b.sort_order ?? 0)
}

/** What the first pass keeps: the tables that posts refer to. */
interface Relations {
  version: string | null
  tags: Map<string, string>
  users: Map<string, string>
  postTags: Map<string, Row[]>
  postAuthors: Map<string, Row[]>
  posts: number
  usersCount: number
  settings: number
}

function push (map: Map<string, Row[]>, key: string, row: Row): void {
  const list = map.get(key)
  if (list === undefined) map.set(key, [row])
  else list.push(row)
}

async function relations (text: AsyncIterable<string>): Promise<Relations> {
  const r: Relations = { version: null, tags: new Map(), users: new Map(), postTags: new Map(), postAuthors: new Map(), posts: 0, usersCount: 0, settings: 0 }
  for await (const { table, value } of tables(text, new Set(['tags', 'users', 'posts_tags', 'posts_authors']), new Set(['posts', 'settings']))) {
    const row = (value ?? {}) as Row
    if (table === 'meta') r.version = str(row.version)
    else if (table === 'posts') r.posts++
    else if (table === 'settings') r.settings++
    else if (table === 'tags' && str(row.id) !== null && str(row.name) !== null) r.tags.set(str(row.id)!, str(row.name)!)
    else if (table === 'users') {
      r.usersCount++
      const id = str(row.id)
      if (id !== null) r.users.set(id, str(row.slug) ?? str(row.name) ?? id)
    } else if (table === 'posts_tags' && str(row.post_id) !== null) push(r.postTags, str(row.post_id)!, row)
    else if (table === 'posts_authors' && str(row.post_id) !== null) push(r.postAuthors, str(row.post_id)!, row)
  }
  return r
}

/** A Ghost date: ISO 8601 text (Ghost 1.x and later) or milliseconds since the epoch (0.x). */
function ghostDate (v: unknown): Date | null {
  const ms = typeof v === 'number' ? v : typeof v === 'string' ? Date.parse(v) : NaN
  return Number.isNaN(ms) ? null : new Date(ms)
}

/**
 * The post's content as HTML when the export holds none (Ghost 5 and later often keep only the
 * editor's Lexical document; Ghost 1 to 4 a mobiledoc one): read from that document.
 */
function documentOf (row: Row): GhostDocument | null {
  const lexical = str(row.lexical)
  const mobiledoc = str(row.mobiledoc)
  const [format, source, read] = lexical !== null ? ['Lexical', lexical, lexicalHtml] as const : mobiledoc !== null ? ['mobiledoc', mobiledoc, mobiledocHtml] as const : [null, null, null] as const
  if (source === null) return null
  try {
    return read(source)
  } catch (err) {
    return { html: '', warnings: [`Its ${format} document could not be read (${(err as Error).message}).`] }
  }
}

function postOf (row: Row, rel: Relations): { post: SourcePost, warnings: readonly string[] } {
  const id = str(row.id) ?? ''
  const given = str(row.html)
  const givenMarkdown = given === null || given.trim() === '' ? str(row.markdown) : null
  const doc = (given === null || given.trim() === '') && givenMarkdown === null ? documentOf(row) : null
  const html = doc !== null && doc.html !== '' ? doc.html : given
  const markdown = html === null || html.trim() === '' ? givenMarkdown : null
  const authors = (rel.postAuthors.get(id) ?? []).sort(byOrder).map(a => rel.users.get(str(a.author_id) ?? ''))
  const author = authors.find(a => a !== undefined) ?? rel.users.get(str(row.author_id) ?? '') ?? null
  const tags = (rel.postTags.get(id) ?? []).sort(byOrder).map(t => rel.tags.get(str(t.tag_id) ?? ''))
    // Internal tags (`#…`) organise Ghost's own site; they are not a reader's tags.
    .filter((t): t is string => t !== undefined && !t.startsWith('#'))
  const post: SourcePost = {
    title: str(row.title) ?? '',
    html: markdown === null ? (html ?? null) : null,
    markdown,
    status: str(row.status) ?? 'draft',
    dateText: str(row.published_at),
    date: ghostDate(row.published_at),
    author,
    tags,
    excerpt: str(row.custom_excerpt),
    slug: str(row.slug),
    permalink: str(row.url),
    oldSlugs: [],
    // Ghost 0.x called it `image`.
    featureImage: str(row.feature_image) ?? str(row.image),
    oversize: false,
  }
  return { post, warnings: doc?.warnings ?? [] }
}

function versionWarning (version: string | null): string | null {
  if (version === null) return 'The export names no Ghost version (meta.version); it was read by its shape.'
  // 0.x exports say "000" or "003"; later ones a semantic version.
  const major = /^0\d\d$/.test(version) ? 0 : Number(/^(\d+)\./.exec(version)?.[1] ?? NaN)
  if (Number.isNaN(major) || major > KNOWN_MAJOR) return `Ghost version "${version}" is not one this service knows (0.x to ${KNOWN_MAJOR}.x); the file was read by its shape (db[].data.posts).`
  return null
}

/**
 * Reads a Ghost export (Settings → Export) in two streamed passes over the stored file, never one
 * JSON.parse: the first keeps the tables posts refer to (tags, users and their links, which may come
 * after the posts), the second yields the posts one by one. A file is a Ghost export by its shape
 * (`db[].data.posts`), not its version string.
 */
export async function * readGhost (open: (first: boolean) => AsyncIterable<string>): AsyncGenerator<Entry> {
  const rel = await relations(open(true))
  if (rel.posts === 0 && rel.version === null) throw new UnreadableFile('The JSON has no db[].data.posts (nor data.posts): it is not a Ghost export.')
  const warning = versionWarning(rel.version)
  if (warning !== null) yield { kind: 'warning', item: 'file', message: warning }
  if (rel.usersCount > 0) yield { kind: 'other', what: 'users', count: rel.usersCount }
  if (rel.settings > 0) yield { kind: 'other', what: 'settings', count: rel.settings }
  for await (const { table, value } of tables(open(false), new Set(['posts']), new Set())) {
    if (table !== 'posts') continue
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      yield { kind: 'warning', item: 'file', message: 'An entry of db[].data.posts is not an object; it was skipped.' }
      continue
    }
    const row = value as Row
    if (row.type === 'page' || row.page === true || row.page === 1) {
      yield { kind: 'other', what: 'pages', count: 1 }
      continue
    }
    const id = str(row.id) ?? ''
    const title = str(row.title) ?? ''
    const label = `post ${id === '' ? '?' : id}${title === '' ? '' : ` "${title.slice(0, 80)}"`}`
    const { post, warnings } = postOf(row, rel)
    for (const message of warnings) yield { kind: 'warning', item: label, message }
    yield { kind: 'item', key: id, label, source: post }
  }
}

/** Ghost's export files as a kind of file posts read: two readings, the first's bytes that are not UTF-8 noted. */
export const ghostReader: FormatReader = {
  passes: 2,
  read: file => readGhost(first => file.open({ noted: first, counted: true })),
}
