import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // A job and its lease, as exports have: `position` is how many entries of the file were written,
    // committed with the report in the transaction of each batch, so a resumed run goes on from there.
    await sql.raw(`
      CREATE TABLE imports (
        id ${t.id},
        owner TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('wordpress', 'ghost')),
        dry_run INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
        upload_id TEXT NOT NULL,
        size ${t.ref} NOT NULL,
        sha256 TEXT NOT NULL,
        position ${t.ref} NOT NULL DEFAULT 0,
        progress INTEGER NOT NULL DEFAULT 0,
        report TEXT NOT NULL,
        seen_tags TEXT NOT NULL,
        failure TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_token TEXT,
        lease_until ${t.timestamp},
        created_at ${t.timestamp} NOT NULL,
        updated_at ${t.timestamp} NOT NULL,
        finished_at ${t.timestamp}
      )`).execute(db)
    await sql`CREATE INDEX imports_queue_idx ON imports (status, lease_until, id)`.execute(db)
    await sql`CREATE INDEX imports_owner_idx ON imports (owner, id)`.execute(db)

    // The uploaded file in stretches, until its import ends: any instance can take the job up.
    await sql.raw(`
      CREATE TABLE import_uploads (
        upload_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data ${t.bytes} NOT NULL,
        created_at ${t.timestamp} NOT NULL,
        PRIMARY KEY (upload_id, seq)
      )`).execute(db)

    // Which row each source entry became: the same file imported again finds its rows, and the
    // primary key makes a second row for one entry impossible.
    await sql.raw(`
      CREATE TABLE import_sources (
        source TEXT NOT NULL,
        source_id TEXT NOT NULL,
        row_id ${t.ref} NOT NULL,
        import_id ${t.ref} NOT NULL,
        PRIMARY KEY (source, source_id)
      )`).execute(db)
  },
  down: forwardOnly,
})
