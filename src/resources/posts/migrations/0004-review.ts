import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // SEO fields, on posts and on each revision (a restore brings them back). Null: not set.
    for (const table of ['posts', 'post_revisions']) {
      for (const column of ['meta_title', 'meta_description', 'canonical_url']) {
        await sql.raw(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT`).execute(db)
      }
    }
    // Preview links: only a token's SHA-256 is kept, and a token is found by it (a unique index),
    // never by comparing token strings. Deleting the row revokes the link; deleting the post, its links.
    await sql.raw(`CREATE TABLE post_preview_links (
      id ${t.id},
      post_id ${t.ref} NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      token_hash TEXT NOT NULL UNIQUE,
      revision INTEGER,
      created_by TEXT NOT NULL,
      created_at ${t.timestamp} NOT NULL,
      expires_at ${t.timestamp} NOT NULL)`).execute(db)
    await sql`CREATE INDEX post_preview_links_post_idx ON post_preview_links (post_id, expires_at)`.execute(db)
  },
  down: forwardOnly,
})
