import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    const statuses = ['draft', 'published', 'archived', 'scheduled']
    await t.widenCheck(db, 'posts', 'status', statuses)
    await t.widenCheck(db, 'exports', 'filter_status', statuses)
    await sql.raw(`ALTER TABLE posts ADD COLUMN publish_at ${t.timestamp}`).execute(db)
    // What the scheduler reads: the next due time, and the posts due by now. Only scheduled posts are in it.
    await sql`CREATE INDEX posts_due_idx ON posts (publish_at, id) WHERE status = 'scheduled'`.execute(db)

    // A post's values after each change, numbered by the post's revision (one per change).
    await sql.raw(`CREATE TABLE post_revisions (
      post_id ${t.ref} NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      number INTEGER NOT NULL,
      title TEXT NOT NULL,
      content TEXT NOT NULL,
      status TEXT NOT NULL,
      slug TEXT NOT NULL,
      tags TEXT NOT NULL,
      excerpt TEXT NOT NULL,
      excerpt_derived INTEGER NOT NULL,
      publish_at ${t.timestamp},
      editor TEXT NOT NULL,
      created_at ${t.timestamp} NOT NULL,
      PRIMARY KEY (post_id, number))`).execute(db)
    // Posts written before revisions existed start their history with what they are now.
    await sql`INSERT INTO post_revisions (post_id, number, title, content, status, slug, tags, excerpt, excerpt_derived, publish_at, editor, created_at)
      SELECT id, revision, title, content, status, slug, tags, excerpt, excerpt_derived, NULL, author, updated_at FROM posts`.execute(db)
  },
  down: forwardOnly,
})
