import { type Kysely, sql } from 'kysely'
import { forwardOnly, type SharedMigration } from '../column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = () => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // The sender's two queues, each its own partial index, so that a claim reads only what it takes
    // however long the other queue is. First attempts of subscription deliveries, per subscription
    // in event order (they start in that order); and deliveries free to go in any
    // order once due: export callbacks and retries. The claim's WHERE repeats these predicates
    // word for word (literals, not parameters), so both planners match the indexes.
    await sql`CREATE INDEX webhook_deliveries_first_idx ON webhook_deliveries (webhook_id, event_id, created_at)
      WHERE state = 'pending' AND attempts = 0 AND webhook_id IS NOT NULL`.execute(db)
    await sql`CREATE INDEX webhook_deliveries_free_idx ON webhook_deliveries (next_attempt_at)
      WHERE state = 'pending' AND (webhook_id IS NULL OR attempts > 0)`.execute(db)
    // The events deliveries refer to (a subscription's delivery holds no copy of its event's body):
    // retention keeps every event from the oldest one a delivery refers to.
    await sql`CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id) WHERE event_id IS NOT NULL`.execute(db)
    // Finished deliveries, for retention. The two queues together are every pending delivery, so
    // the index on (state, next_attempt_at) has no reader left (and SQLite's planner preferred it to
    // the free queue's, reading every first attempt on the way); nor has the claim's old order check.
    await sql`CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (updated_at) WHERE state <> 'pending'`.execute(db)
    await sql`DROP INDEX webhook_deliveries_due_idx`.execute(db)
    await sql`DROP INDEX webhook_deliveries_order_idx`.execute(db)
  },
  down: forwardOnly,
})
