import type { Kysely } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    await t.widenCheck(db, 'exports', 'format', ['ndjson', 'wxr'])
  },
  down: forwardOnly,
})
