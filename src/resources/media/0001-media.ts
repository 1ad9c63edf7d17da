import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // `id` is random (media URLs are public); `sha256` names the stored blob, which several rows may share.
    await sql.raw(`
      CREATE TABLE media (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        filename TEXT NOT NULL,
        content_type TEXT NOT NULL,
        bytes ${t.ref} NOT NULL,
        width INTEGER NOT NULL,
        height INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        alt TEXT NOT NULL DEFAULT '',
        caption TEXT NOT NULL DEFAULT '',
        placeholder TEXT NOT NULL,
        created_at ${t.timestamp} NOT NULL,
        updated_at ${t.timestamp} NOT NULL,
        revision INTEGER NOT NULL DEFAULT 1
      )`).execute(db)
    await sql`CREATE INDEX media_owner_created_idx ON media (owner, created_at, id)`.execute(db)
    await sql`CREATE INDEX media_created_idx ON media (created_at, id)`.execute(db)
    await sql`CREATE INDEX media_sha256_idx ON media (sha256)`.execute(db)

    // One row per variant asked for: a lease while one instance computes it, then the blob that holds it.
    await sql.raw(`
      CREATE TABLE media_variants (
        media_id TEXT NOT NULL REFERENCES media (id) ON DELETE CASCADE,
        width INTEGER NOT NULL,
        format TEXT NOT NULL,
        quality INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('computing', 'ready')),
        lease_token TEXT,
        lease_until ${t.timestamp},
        sha256 TEXT,
        bytes ${t.ref},
        created_at ${t.timestamp} NOT NULL,
        PRIMARY KEY (media_id, width, format, quality)
      )`).execute(db)
    await sql`CREATE INDEX media_variants_sha256_idx ON media_variants (sha256)`.execute(db)

    // Blobs being written whose row is not committed yet: the sweep leaves them alone until they expire.
    await sql.raw(`
      CREATE TABLE media_blob_claims (
        token TEXT PRIMARY KEY,
        blob_key TEXT NOT NULL,
        expires_at ${t.timestamp} NOT NULL
      )`).execute(db)
    await sql`CREATE INDEX media_blob_claims_key_idx ON media_blob_claims (blob_key)`.execute(db)
  },
  down: forwardOnly,
})
