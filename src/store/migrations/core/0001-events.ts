import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // The event log, written in the unit of work of the change it records. `owner`
    // and `public` decide who sees it on the stream; `webhook_id` marks an event for one
    // subscription alone (a ping), which neither the stream nor other subscriptions see.
    await sql.raw(`
      CREATE TABLE events (
        id ${t.id},
        type TEXT NOT NULL,
        occurred_at ${t.timestamp} NOT NULL,
        owner TEXT,
        public INTEGER NOT NULL DEFAULT 0,
        webhook_id ${t.ref},
        data TEXT NOT NULL
      )`).execute(db)
    await sql`CREATE INDEX events_occurred_at_idx ON events (occurred_at)`.execute(db)
    // Where the fan-out to subscriptions stands, and the newest event retention has deleted.
    await sql`INSERT INTO meta (key, value) VALUES ('events_fanned_out', '0'), ('events_pruned_through', '0')`.execute(db)

    // The outbox grows the columns of subscription deliveries: which subscription and event, and
    // what the last attempt got. Export callbacks leave them null.
    for (const column of [`webhook_id ${t.ref}`, `event_id ${t.ref}`, 'event_type TEXT', 'last_status_code INTEGER', `delivered_at ${t.timestamp}`]) {
      await sql.raw(`ALTER TABLE webhook_deliveries ADD COLUMN ${column}`).execute(db)
    }
    await sql`CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, created_at, id)`.execute(db)
    await sql`CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (webhook_id, state, attempts, event_id)`.execute(db)
  },
  down: forwardOnly,
})
