import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // Which instance holds a running Idempotency-Key claim, and each instance's heartbeat lease: a
    // claim whose owner's lease has lapsed is dead and taken over at once. Records
    // written before this have no owner and are held until their locked_until, as before.
    await sql`ALTER TABLE idempotency_keys ADD COLUMN owner TEXT`.execute(db)
    await sql.raw(`CREATE TABLE instances (id TEXT PRIMARY KEY, lease_until ${t.timestamp} NOT NULL)`).execute(db)
  },
  down: forwardOnly,
})
