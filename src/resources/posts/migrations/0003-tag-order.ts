import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // A tag's posts in the list's default order, read from an index: a list filtered by one tag
    // walks that tag's rows newest first and stops at the page's end, whatever the other posts
    // are. A post's created_at never changes, so the copy never goes stale.
    await sql.raw(`ALTER TABLE post_tags ADD COLUMN created_at ${t.timestamp}`).execute(db)
    await sql`UPDATE post_tags SET created_at = (SELECT created_at FROM posts WHERE posts.id = post_tags.post_id)`.execute(db)
    await sql`CREATE INDEX post_tags_key_created_at_idx ON post_tags (tag_key, created_at, post_id)`.execute(db)
  },
  down: forwardOnly,
})
