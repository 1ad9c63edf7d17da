import { execFileSync } from 'node:child_process'
import path from 'node:path'
import Database from 'better-sqlite3'
import { SignJWT } from 'jose'

/** The project's root: the build whose `dist/blog.js` makes the schema unless another is named. */
export const ROOT = path.resolve(import.meta.dirname, '..')
/** The posts of the benches' SQLite runs. */
export const POSTS = 10_000
/** Seeded posts carry one of this many tags (`tag-0` … `tag-9`), so a tag holds a tenth of them. */
export const TAGS = 10
// ~2 KB of content per post, the same in the seed, the wrk script's writes and every server.
export const FILLER = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(36)

/**
 * Posts as the service stores them: all published, by `bench`, a second apart, ~2 KB each. The
 * schema is made by the `migrate` of the build in `root` (this checkout's, or the baseline's).
 */
export function seedSqlite (file: string, count: number, root = ROOT, { schemaMade = false } = {}): void {
  if (!schemaMade) migrateFile(file, root)
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = OFF')
  // Full-text indexing of 2 GB would take most of the run; search is not benchmarked.
  const trigger = count > POSTS ? (db.prepare("select sql from sqlite_master where name = 'posts_fts_ai'").get() as { sql: string }).sql : null
  if (trigger !== null) db.exec('drop trigger posts_fts_ai')
  // With what the service derives on a write: the slug, published_at, the HTML and excerpt of the
  // content (its first 200 characters; close enough for reads), and one of ten tags per post.
  db.prepare(`
    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
    INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug, published_at, tags, content_html, excerpt)
    SELECT title, content, 'published', 'bench', at, at, 1, 'post-' || i, at, '["tag-' || (i % ${TAGS}) || '"]', '<p>' || content || '</p>' || char(10), substr(content, 1, 200) || '…'
    FROM (SELECT i, 'Post ' || i || ' ' || lower(hex(randomblob(4))) AS title, 'Post number ' || i || '. ' || ? AS content,
                 strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch') AS at FROM seq)`).run(count, FILLER)
  if (trigger !== null) db.exec(trigger)
  db.exec('INSERT INTO post_slugs (slug, post_id) SELECT slug, id FROM posts')
  // A baseline's schema may predate post_tags.created_at (posts/0003-tag-order).
  const tagOrder = (db.prepare("SELECT count(*) AS n FROM pragma_table_info('post_tags') WHERE name = 'created_at'").get() as { n: number }).n > 0
  db.exec(`INSERT INTO post_tags (post_id, tag_key, name${tagOrder ? ', created_at' : ''}) SELECT id, 'tag-' || (id % ${TAGS}), 'tag-' || (id % ${TAGS})${tagOrder ? ', created_at' : ''} FROM posts`)
  db.exec('ANALYZE')
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/** Applies every migration of the build in `root` to a SQLite file, as an operator's `blog migrate` does; returns how long it took (ms). */
export function migrateFile (file: string, root = ROOT): number {
  const t0 = performance.now()
  execFileSync(process.execPath, [path.join(root, 'dist/blog.js'), 'migrate'], { env: { ...process.env, DATABASE_URL: `sqlite:${file}` }, stdio: ['ignore', 'ignore', 'inherit'] })
  return performance.now() - t0
}

/** The JWT secret the benches start the service with, so that writes verify a writer's token. */
export const JWT_SECRET = 'bench-throughput-secret-bench-throughput!!'

/** What every bench sets for the service: that secret, a rate limit the load does not reach, and no first admin key. */
export const SERVICE_ENV = { AUTH_JWT_SECRET: JWT_SECRET, RATE_LIMIT_MAX: '1000000000', BOOTSTRAP_ADMIN_KEY: 'false' } as const

/** A writer's token (`posts:write`, 4 hours), signed with JWT_SECRET. */
export async function writerToken (): Promise<string> {
  return await new SignJWT({ scope: 'posts:write' }).setProtectedHeader({ alg: 'HS256' }).setSubject('bench')
    .setExpirationTime('4h').sign(new TextEncoder().encode(JWT_SECRET))
}
