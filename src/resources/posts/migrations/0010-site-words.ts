import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'
import { firstFreeSlug } from '../../../domain/slug.ts'

/** The site's words when this migration was made (frozen with it, as the migration is). */
const SITE_WORDS = ['page', 'tag', 'author', 'search', 'p', 'assets', 'media']

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // A post whose slug is one of the reading site's words (`/page`, `/tag` …) takes the first free
    // numbered one (`page-2`); the word stays its old slug, so links to it on the API still lead there.
    const now = t.kind === 'sqlite' ? new Date().toISOString() : new Date()
    for (const word of SITE_WORDS) {
      const held = await sql<{ id: number | string }>`SELECT id FROM posts WHERE slug = ${word}`.execute(db)
      const post = held.rows[0]
      if (post === undefined) continue
      const taken = await sql<{ slug: string }>`SELECT slug FROM post_slugs WHERE slug = ${word} OR (slug > ${`${word}-`} AND slug < ${`${word}.`})`.execute(db)
      const { slug } = firstFreeSlug(word, new Set([word, ...taken.rows.map(r => r.slug)]), 2)
      await sql`INSERT INTO post_slugs (slug, post_id) VALUES (${slug}, ${post.id})`.execute(db)
      await sql`UPDATE posts SET slug = ${slug}, updated_at = ${now} WHERE id = ${post.id}`.execute(db)
    }
  },
  down: forwardOnly,
})
