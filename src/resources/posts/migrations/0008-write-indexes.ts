import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // Every index on posts is written by every create (and most edits). Behind status, SQLite
    // keeps only the orders a reader's front page uses (created_at, published_at newest first, id
    // for the sitemap): a list by title, updated_at, slug or oldest published first walks the sort
    // key's own index and passes over posts that are not published, still without sorting
    // (test/resources/posts/query-plans.test.ts lists every shape and its plan). PostgreSQL's planner sorts
    // instead, so it keeps them.
    if (t.kind === 'sqlite') {
      for (const name of ['posts_status_title_idx', 'posts_status_updated_at_idx', 'posts_status_slug_idx', 'posts_status_published_asc_idx']) {
        await sql.raw(`DROP INDEX ${name}`).execute(db)
      }
    }
    // `?author=` in the default order reads one author's posts in order, not all of them sorted.
    await sql`DROP INDEX posts_author_idx`.execute(db)
    await sql`CREATE INDEX posts_author_created_at_idx ON posts (author, created_at, id)`.execute(db)
    // PostgreSQL reads the sitemap's pages of published posts from the primary key (the filter on
    // status passes most rows); SQLite still reads them from this index.
    if (t.kind === 'postgres') await sql`DROP INDEX posts_status_id_idx`.execute(db)
    // Only posts with a feature image are asked about by image (a deletion of the image).
    await sql`DROP INDEX posts_feature_image_id_idx`.execute(db)
    await sql`CREATE INDEX posts_feature_image_id_idx ON posts (feature_image_id) WHERE feature_image_id IS NOT NULL`.execute(db)
  },
  down: forwardOnly,
})
