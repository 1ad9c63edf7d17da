import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // One row: the settings as JSON (their schema lives in the code, which fills in defaults).
    await sql.raw(`CREATE TABLE site_settings (
      id INTEGER PRIMARY KEY CHECK (id = 1), settings TEXT NOT NULL,
      revision INTEGER NOT NULL, updated_at ${t.timestamp} NOT NULL)`).execute(db)
  },
  down: forwardOnly,
})
