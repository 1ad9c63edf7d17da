import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // PostgreSQL keeps its generated tsvector: the row's own statement updates it, in the server.
    if (t.kind === 'postgres') return
    // On SQLite the full-text index is fed after the commit (search-indexer.ts), not by triggers
    // inside every write: a write only queues its post's id. The index holds no copy of the text
    // (contentless), so an entry is removed by rowid alone, whatever the post holds by then.
    for (const trigger of ['posts_fts_ai', 'posts_fts_ad', 'posts_fts_au']) await sql.raw(`DROP TRIGGER ${trigger}`).execute(db)
    await sql`DROP TABLE posts_fts`.execute(db)
    await sql`CREATE VIRTUAL TABLE posts_fts USING fts5(title, content, tags, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2')`.execute(db)
    await sql`INSERT INTO posts_fts (rowid, title, content, tags) SELECT id, title, content, tags FROM posts`.execute(db)
    // Posts whose entry in posts_fts is to be made again (or removed: the post is gone). No
    // foreign key: a deleted post's id stays queued until its entry is removed.
    await sql`CREATE TABLE post_search_queue (post_id INTEGER PRIMARY KEY)`.execute(db)
  },
  down: forwardOnly,
})
