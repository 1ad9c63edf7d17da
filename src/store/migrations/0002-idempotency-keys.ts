import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from './column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    await sql.raw(`CREATE TABLE idempotency_keys (
      principal TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL, key TEXT NOT NULL,
      fingerprint TEXT NOT NULL, token TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('running', 'done')),
      locked_until ${t.timestamp} NOT NULL, status INTEGER, headers TEXT, body TEXT,
      created_at ${t.timestamp} NOT NULL, expires_at ${t.timestamp} NOT NULL,
      PRIMARY KEY (principal, method, path, key))`).execute(db)
    await sql`CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)`.execute(db)
  },
  down: forwardOnly,
})
