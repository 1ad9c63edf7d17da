import { type Kysely, sql } from 'kysely'

// Frozen: never edit a migration that has shipped; add a new one.
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE idempotency_keys (
      principal TEXT NOT NULL,
      method TEXT NOT NULL,
      path TEXT NOT NULL,
      key TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      token TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('running', 'done')),
      locked_until TIMESTAMPTZ(3) NOT NULL,
      status INTEGER,
      headers TEXT,
      body TEXT,
      created_at TIMESTAMPTZ(3) NOT NULL,
      expires_at TIMESTAMPTZ(3) NOT NULL,
      PRIMARY KEY (principal, method, path, key)
    )`.execute(db)
  await sql`CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)`.execute(db)
}

export async function down (): Promise<void> {
  throw new Error('migrations are forward-only')
}
