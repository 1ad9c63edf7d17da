import Database from 'better-sqlite3'

/** A post row as the service stores it (the columns its representation shows). */
export interface PostRow {
  id: number
  title: string
  content: string
  status: string
  author: string
  created_at: string
  updated_at: string
  revision: number
  publish_at: string | null
  slug: string | null
  tags: string | null
  excerpt: string | null
  published_at: string | null
  content_html: string | null
}

/**
 * The statements the service runs for the benchmarked requests (anonymous reads of published
 * posts, newest first; writes by id and revision), prepared once. Shared by the two reference
 * servers, so both do the same database work as the service and nothing else.
 */
export function openPosts (file: string) {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('busy_timeout = 5000')
  const byId = db.prepare<[number, string], PostRow>('select * from "posts" where "id" = ? and "posts"."status" = ?')
  const first = db.prepare<[string, number], PostRow>('select * from "posts" where "posts"."status" = ? order by "posts"."created_at" desc, "posts"."id" desc limit ?')
  const after = db.prepare<[string, string, number, number], PostRow>(
    'select * from "posts" where "posts"."status" = ? and ("posts"."created_at", "posts"."id") < (?, ?) order by "posts"."created_at" desc, "posts"."id" desc limit ?')
  const insert = db.prepare<[string, string, string, string, string, string, number], PostRow>(
    'insert into "posts" ("title", "content", "status", "author", "created_at", "updated_at", "revision") values (?, ?, ?, ?, ?, ?, ?) returning *')
  const update = db.prepare<[string, string, string, string, number, number], PostRow>(
    'update "posts" set "title" = ?, "content" = ?, "status" = ?, "updated_at" = ?, "revision" = "revision" + 1 where "id" = ? and "revision" = ? returning *')
  return {
    get: (id: number) => byId.get(id, 'published'),
    /** One page of 20 and whether there is more; `position` is the last row's (created_at, id). */
    list: (position: [string, number] | null) => {
      const rows = position === null ? first.all('published', 21) : after.all('published', position[0], position[1], 21)
      return { items: rows.slice(0, 20), more: rows.length > 20 }
    },
    create: (title: string, content: string, author: string) => {
      const now = new Date().toISOString()
      return insert.get(title, content, 'published', author, now, now, 1)!
    },
    replace: (id: number, title: string, content: string) => {
      const current = byId.get(id, 'published')
      if (current === undefined) return undefined
      return update.get(title, content, 'published', new Date().toISOString(), id, current.revision)
    },
    close: () => { db.close() },
  }
}

const POST_FIELDS = ['id', 'title', 'content', 'status', 'publish_at', 'created_at', 'updated_at', 'author', 'slug', 'tags', 'excerpt', 'published_at', 'content_html'] as const

/**
 * A post as the service shows it (the content model added the slug, tags, excerpt, published_at and the
 * rendered HTML), field for field: the same body for every server, so each writes and escapes
 * the same bytes and the ratios measure the work around them.
 */
export function postJson (p: PostRow): string {
  // Field by field, in the service's order (a spread of the row would add revision and lose it).
  const body: Record<string, unknown> = {}
  for (const k of POST_FIELDS) body[k] = k === 'tags' ? (p.tags === null ? [] : JSON.parse(p.tags) as string[]) : p[k]
  return JSON.stringify(body)
}

export function listJson (items: readonly PostRow[]): string {
  return JSON.stringify(items.map(p => ({ id: p.id, title: p.title })))
}
