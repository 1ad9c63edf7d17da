import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { RESOURCES } from '../../src/registry.ts'

/**
 * Issue 21's "one shape for every resource": outside `src/resources/`, the source names no
 * registered resource (its code, its texts, its comments), so that a resource is its folder and
 * its line in the registry. The names are the registry's, every one of them (a facility's routes
 * are its own, not the registry's resources); what may still name one is listed below, each with
 * its reason (docs/resources.md, "What stays in the core, and why").
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const SRC = path.join(ROOT, 'src')
/** The parts' folders: the resources', the facilities'. */
const PART_FOLDERS = [path.join(SRC, 'resources'), path.join(SRC, 'facilities')]

/** Words that hold a resource's name but mean another thing. */
const FOREIGN_WORDS = new Set([
  'orderBy', // Kysely's ORDER BY
  'webhook_deliveries_order_idx', // deliveries in their order (shipped core migration 0001-events)
])

/** Where a resource's name stays in the core, and why. `words: '*'` allows the whole file. */
const ALLOWED: readonly { readonly file: string, readonly words: readonly string[] | '*', readonly why: string }[] = [
  { file: 'src/registry.ts', words: '*', why: 'the registry: its one line per resource' },
  { file: 'src/store/sqlite/migrations/0001-initial.ts', words: '*', why: 'shipped and frozen: made the first posts table with the core\'s, existing databases upgrade unchanged' },
  { file: 'src/store/postgres/migrations/0001-initial.ts', words: '*', why: 'shipped and frozen, as the SQLite one' },
  { file: 'src/site/objects.ts', words: ['posts', 'posts_per_page'], why: 'the objects themes are written against (docs/themes.md): the list `posts` and the setting `site.posts_per_page`, as GET /site names it' },
  { file: 'src/domain/roles.ts', words: '*', why: 'the one table of what each role may do: roles are defined by what they do to posts, media and the admin\'s resources' },
]

/** `exportId` → export, id; `PostStore` → post, store; `export_id` → export, id. */
function parts (word: string): string[] {
  return word.split('_').flatMap(w => w.split(/(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/)).filter(p => p !== '').map(p => p.toLowerCase())
}

/**
 * The words of `text` that name resource `name` (`posts`): the name itself, in any case and as any
 * part of an identifier (`postsStore`, `posts_fts`); its singular as part of a compound identifier
 * (`exportId`, `ORDER_NOT_FOUND`, `renderPost`: alone it is English or HTTP, "in order", `post`);
 * and an event type's prefix in a string (`'post.created'`).
 */
function namings (line: string, name: string): string[] {
  const singular = name.replace(/s$/, '')
  const found: string[] = []
  // HTTP's "media type" (RFC 9110 §8.3.1: `vendorMediaType`, UNSUPPORTED_MEDIA_TYPE) is not the media resource.
  const text = line.replace(/\bmedia[ -]types?\b/gi, '')
  for (const [word] of text.matchAll(/[A-Za-z0-9_]+/g)) {
    if (FOREIGN_WORDS.has(word)) continue
    const ps = parts(word)
    if (ps.some((p, i) => p === 'media' && /^types?$/.test(ps[i + 1] ?? ''))) continue
    if (ps.includes(name) || (ps.length > 1 && ps.includes(singular))) found.push(word)
  }
  for (const [typed] of text.matchAll(new RegExp(`(?<=['"\u0060])${singular}\\.[a-z]+`, 'g'))) found.push(typed)
  return found
}

function sourceFiles (dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return PART_FOLDERS.includes(p) ? [] : sourceFiles(p)
    return e.name.endsWith('.ts') ? [p] : []
  })
}

/** Every naming of a registered resource outside src/resources/ that the allow-list does not name. */
export function resourceNamesOutsideResources (names: readonly string[]): string[] {
  const hits: string[] = []
  for (const file of sourceFiles(SRC)) {
    const rel = path.relative(ROOT, file).split(path.sep).join('/')
    const allowed = ALLOWED.find(a => a.file === rel)
    if (allowed?.words === '*') continue
    fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      for (const name of names) {
        for (const word of namings(line, name)) {
          if (allowed?.words.includes(word) === true) continue
          hits.push(`${rel}:${i + 1}: ${word} (${name}): ${line.trim()}`)
        }
      }
    })
  }
  return hits
}

describe('resource names outside src/resources/', () => {
  const names = RESOURCES.map(r => r.name)

  it('reads the names from the registry', () => {
    assert.ok(names.length >= 3, names.join(', '))
    for (const name of names) assert.match(name, /^[a-z][a-z0-9-]*$/)
  })

  it('finds none but the allowed exceptions', () => {
    assert.deepEqual(resourceNamesOutsideResources(names), [])
  })

  it('finds what it looks for', () => {
    assert.deepEqual(namings('const kind = \'posts\'', 'posts'), ['posts'])
    assert.deepEqual(namings('uow.postsStore.list() // posts_fts', 'posts'), ['postsStore', 'posts_fts'])
    assert.deepEqual(namings('d.exportId, export_id, renderPost', 'exports'), ['exportId', 'export_id'])
    assert.deepEqual(namings('renderPost(PostStore)', 'posts'), ['renderPost', 'PostStore'])
    assert.deepEqual(namings('type: \'order.created\' (`order.cancelled`)', 'orders'), ['order.created', 'order.cancelled'])
    assert.deepEqual(namings('plan.order.map(…)', 'orders'), [])
    assert.deepEqual(namings('in the order they came; method === \'post\'; export const x; .orderBy(\'id\')', 'orders'), [])
    assert.deepEqual(namings('PostgreSQL, postgres://, exportable', 'posts'), [])
    assert.deepEqual(namings('vendorMediaType, UNSUPPORTED_MEDIA_TYPE, a media type; mediaStore', 'media'), ['mediaStore'])
  })

  it('allows nothing it does not need: every exception still names a resource', () => {
    for (const a of ALLOWED) {
      const text = fs.readFileSync(path.join(ROOT, a.file), 'utf8')
      const words = names.flatMap(n => namings(text, n))
      if (a.words === '*') assert.ok(words.length > 0, `${a.file} names no resource any more: drop it from ALLOWED`)
      else for (const w of a.words) assert.ok(words.includes(w), `${a.file} no longer has ${w}: drop it from ALLOWED`)
    }
  })
})
