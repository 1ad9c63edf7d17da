import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'
import { renderContent } from '../markdown.ts'
import { deriveSlug, firstFreeSlug } from '../../../domain/slug.ts'

/** What `published_at` sorts as when it is null: after every real time, ascending and descending alike. */
export const NULL_PUBLISHED_ASC = '9999-12-31T23:59:59.999Z'
export const NULL_PUBLISHED_DESC = '0001-01-01T00:00:00.000Z'

const BATCH = 1000

interface OldPost { id: number | string, title: string, content: string, status: string, created_at: string | Date }

/**
 * Every existing post, in id order, gets what a new one gets: a derived slug (unique:
 * `-2`, `-3` … in id order), its rendered HTML and derived excerpt, and `published_at` = `created_at`
 * when it is published. Tags start empty.
 */
async function backfill (db: Kysely<unknown>): Promise<void> {
  const taken = new Set<string>()
  for (let after = 0; ;) {
    const { rows } = await sql<OldPost>`SELECT id, title, content, status, created_at FROM posts WHERE id > ${after} ORDER BY id LIMIT ${BATCH}`.execute(db)
    if (rows.length === 0) return
    for (const row of rows) {
      const { slug } = firstFreeSlug(deriveSlug(row.title), taken)
      taken.add(slug)
      const { html, excerpt } = renderContent(row.content)
      const publishedAt = row.status === 'published' ? row.created_at : null
      await sql`UPDATE posts SET slug = ${slug}, excerpt = ${excerpt}, content_html = ${html}, published_at = ${publishedAt} WHERE id = ${row.id}`.execute(db)
      await sql`INSERT INTO post_slugs (slug, post_id) VALUES (${slug}, ${row.id})`.execute(db)
    }
    after = Number(rows.at(-1)!.id)
  }
}

/** Full-text search also over the tags: the index is made again with them. */
async function searchWithTags (db: Kysely<unknown>, t: ColumnTypes): Promise<void> {
  if (t.kind === 'postgres') {
    await sql`ALTER TABLE posts DROP COLUMN search_vector`.execute(db)
    await sql`ALTER TABLE posts ADD COLUMN search_vector TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || content || ' ' || tags)) STORED`.execute(db)
    await sql`CREATE INDEX posts_search_idx ON posts USING GIN (search_vector)`.execute(db)
    return
  }
  for (const trigger of ['posts_fts_ai', 'posts_fts_ad', 'posts_fts_au']) await sql.raw(`DROP TRIGGER ${trigger}`).execute(db)
  await sql`DROP TABLE posts_fts`.execute(db)
  await sql`CREATE VIRTUAL TABLE posts_fts USING fts5(title, content, tags, content='posts', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`.execute(db)
  await sql`CREATE TRIGGER posts_fts_ai AFTER INSERT ON posts BEGIN
    INSERT INTO posts_fts(rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
  END`.execute(db)
  await sql`CREATE TRIGGER posts_fts_ad AFTER DELETE ON posts BEGIN
    INSERT INTO posts_fts(posts_fts, rowid, title, content, tags) VALUES ('delete', old.id, old.title, old.content, old.tags);
  END`.execute(db)
  await sql`CREATE TRIGGER posts_fts_au AFTER UPDATE OF title, content, tags ON posts BEGIN
    INSERT INTO posts_fts(posts_fts, rowid, title, content, tags) VALUES ('delete', old.id, old.title, old.content, old.tags);
    INSERT INTO posts_fts(rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
  END`.execute(db)
  await sql`INSERT INTO posts_fts(posts_fts) VALUES ('rebuild')`.execute(db)
}

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    const pg = t.kind === 'postgres'
    // "C" collation on PostgreSQL: byte order, as SQLite sorts, so both stores order slugs alike.
    await sql.raw(`ALTER TABLE posts ADD COLUMN slug TEXT${pg ? ' COLLATE "C"' : ''}`).execute(db)
    // The tags as given (a JSON array) for the representation and search; post_tags indexes them.
    await sql`ALTER TABLE posts ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'`.execute(db)
    await sql`ALTER TABLE posts ADD COLUMN excerpt TEXT NOT NULL DEFAULT ''`.execute(db)
    // 1 while the excerpt is derived from the content (made again when the content changes).
    await sql`ALTER TABLE posts ADD COLUMN excerpt_derived INTEGER NOT NULL DEFAULT 1`.execute(db)
    await sql`ALTER TABLE posts ADD COLUMN content_html TEXT NOT NULL DEFAULT ''`.execute(db)
    await sql.raw(`ALTER TABLE posts ADD COLUMN published_at ${t.timestamp}`).execute(db)
    // Nulls sort last both ways. One sort column per direction, null replaced by the
    // far end of time, so each direction is one plain index range (constant-cost keyset paging).
    for (const [dir, end] of [['asc', NULL_PUBLISHED_ASC], ['desc', NULL_PUBLISHED_DESC]] as const) {
      const expr = pg ? `COALESCE(published_at, TIMESTAMPTZ '${end}')` : `COALESCE(published_at, '${end}')`
      await sql.raw(`ALTER TABLE posts ADD COLUMN published_${dir} ${t.timestamp} GENERATED ALWAYS AS (${expr}) ${pg ? 'STORED' : 'VIRTUAL'}`).execute(db)
    }

    // Every slug a post holds, current and old (aliases): the primary key keeps them unique across
    // posts, under concurrent creates too (a claim is an insert that conflicts, not a check).
    await sql.raw(`CREATE TABLE post_slugs (
      slug TEXT${pg ? ' COLLATE "C"' : ''} PRIMARY KEY,
      post_id ${t.ref} NOT NULL REFERENCES posts (id) ON DELETE CASCADE)`).execute(db)
    await sql`CREATE INDEX post_slugs_post_idx ON post_slugs (post_id)`.execute(db)
    // One row per tag of a post, by its case-folded key: `?tag=` is an index lookup.
    await sql.raw(`CREATE TABLE post_tags (
      post_id ${t.ref} NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      tag_key TEXT${pg ? ' COLLATE "C"' : ''} NOT NULL,
      name TEXT NOT NULL,
      PRIMARY KEY (post_id, tag_key))`).execute(db)
    await sql`CREATE INDEX post_tags_key_idx ON post_tags (tag_key, post_id)`.execute(db)

    await backfill(db)

    await sql`CREATE UNIQUE INDEX posts_slug_idx ON posts (slug)`.execute(db)
    await sql`CREATE INDEX posts_status_slug_idx ON posts (status, slug, id)`.execute(db)
    for (const dir of ['asc', 'desc']) {
      await sql.raw(`CREATE INDEX posts_published_${dir}_idx ON posts (published_${dir}, id)`).execute(db)
      await sql.raw(`CREATE INDEX posts_status_published_${dir}_idx ON posts (status, published_${dir}, id)`).execute(db)
    }
    await searchWithTags(db, t)
  },
  down: forwardOnly,
})
