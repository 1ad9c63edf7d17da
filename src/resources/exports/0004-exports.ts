import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // A job and its lease: `lease_token` names the claim a worker holds until `lease_until`; every write
    // of a worker checks it, so a worker that lost its lease (paused, partitioned) can no longer write.
    await sql.raw(`
      CREATE TABLE exports (
        id ${t.id},
        owner TEXT NOT NULL,
        format TEXT NOT NULL CHECK (format IN ('ndjson')),
        filter_status TEXT CHECK (filter_status IN ('draft', 'published', 'archived')),
        api_version INTEGER NOT NULL,
        link_base TEXT NOT NULL,
        callback_url TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
        exported ${t.ref} NOT NULL DEFAULT 0,
        total ${t.ref},
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_token TEXT,
        lease_until ${t.timestamp},
        error TEXT,
        size ${t.ref},
        sha256 TEXT,
        created_at ${t.timestamp} NOT NULL,
        updated_at ${t.timestamp} NOT NULL,
        finished_at ${t.timestamp}
      )`).execute(db)
    await sql`CREATE INDEX exports_queue_idx ON exports (status, lease_until, id)`.execute(db)
    await sql`CREATE INDEX exports_owner_idx ON exports (owner, id)`.execute(db)
    await sql`CREATE INDEX exports_finished_idx ON exports (finished_at)`.execute(db)

    // The file, in byte ranges: any instance serves it, and a range is read without the rest.
    await sql.raw(`
      CREATE TABLE export_chunks (
        export_id ${t.ref} NOT NULL REFERENCES exports (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        start ${t.ref} NOT NULL,
        size INTEGER NOT NULL,
        data ${t.bytes} NOT NULL,
        PRIMARY KEY (export_id, seq)
      )`).execute(db)
    await sql`CREATE INDEX export_chunks_start_idx ON export_chunks (export_id, start)`.execute(db)

    // The outbox: written in the transaction that ends a job, so a delivery survives a restart.
    await sql.raw(`
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        export_id ${t.ref} REFERENCES exports (id) ON DELETE CASCADE,
        url TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at ${t.timestamp} NOT NULL,
        lease_until ${t.timestamp},
        last_error TEXT,
        created_at ${t.timestamp} NOT NULL,
        updated_at ${t.timestamp} NOT NULL
      )`).execute(db)
    await sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (state, next_attempt_at)`.execute(db)
  },
  down: forwardOnly,
})
