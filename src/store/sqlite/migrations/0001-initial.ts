import { type Kysely, sql } from 'kysely'

// Frozen: never edit a migration that has shipped; add a new one.
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE posts (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      title TEXT NOT NULL,
      content TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('draft', 'published', 'archived')),
      author TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      revision INTEGER NOT NULL DEFAULT 1
    )`.execute(db)
  // One index per sort key, alone (admin, any status) and behind status (the visibility and status filters).
  for (const key of ['created_at', 'updated_at', 'title']) {
    await sql.raw(`CREATE INDEX posts_${key}_idx ON posts (${key}, id)`).execute(db)
    await sql.raw(`CREATE INDEX posts_status_${key}_idx ON posts (status, ${key}, id)`).execute(db)
  }
  await sql`CREATE INDEX posts_status_id_idx ON posts (status, id)`.execute(db)
  await sql`CREATE INDEX posts_author_idx ON posts (author, id)`.execute(db)

  // Full-text index kept in step with posts by triggers (external-content FTS5 table).
  await sql`CREATE VIRTUAL TABLE posts_fts USING fts5(title, content, content='posts', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`.execute(db)
  await sql`CREATE TRIGGER posts_fts_ai AFTER INSERT ON posts BEGIN
    INSERT INTO posts_fts(rowid, title, content) VALUES (new.id, new.title, new.content);
  END`.execute(db)
  await sql`CREATE TRIGGER posts_fts_ad AFTER DELETE ON posts BEGIN
    INSERT INTO posts_fts(posts_fts, rowid, title, content) VALUES ('delete', old.id, old.title, old.content);
  END`.execute(db)
  await sql`CREATE TRIGGER posts_fts_au AFTER UPDATE OF title, content ON posts BEGIN
    INSERT INTO posts_fts(posts_fts, rowid, title, content) VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO posts_fts(rowid, title, content) VALUES (new.id, new.title, new.content);
  END`.execute(db)

  await sql`
    CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      scopes TEXT NOT NULL,
      hash TEXT NOT NULL,
      created_at TEXT NOT NULL,
      revoked_at TEXT
    )`.execute(db)
  await sql`CREATE UNIQUE INDEX api_keys_live_name_idx ON api_keys (name) WHERE revoked_at IS NULL`.execute(db)

  await sql`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`.execute(db)
}

export async function down (): Promise<void> {
  throw new Error('migrations are forward-only')
}
