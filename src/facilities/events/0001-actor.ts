import { type Kysely, sql } from 'kysely'
import { forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
/** Who caused each event (JSON `{kind, id, name}`); null on events from before it was kept. */
export const migration: SharedMigration = () => ({
  async up (db: Kysely<unknown>): Promise<void> {
    await sql.raw('ALTER TABLE events ADD COLUMN actor TEXT').execute(db)
  },
  down: forwardOnly,
})
