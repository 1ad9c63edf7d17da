import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // `secret` and `previous_secret` are sealed (src/resources/webhooks/secrets.ts), never plain.
    // `after_event_id`: the newest event when it was made; it receives the events after it.
    await sql.raw(`CREATE TABLE webhook_subscriptions (
      id ${t.id}, owner TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('enabled', 'disabled')),
      url TEXT NOT NULL, events TEXT NOT NULL, description TEXT, disabled_reason TEXT,
      secret TEXT NOT NULL, previous_secret TEXT, previous_secret_until ${t.timestamp},
      failures INTEGER NOT NULL DEFAULT 0, after_event_id ${t.ref} NOT NULL,
      created_at ${t.timestamp} NOT NULL, updated_at ${t.timestamp} NOT NULL, revision INTEGER NOT NULL DEFAULT 1)`).execute(db)
    await sql`CREATE INDEX webhook_subscriptions_created_at_idx ON webhook_subscriptions (created_at, id)`.execute(db)
  },
  down: forwardOnly,
})
