import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // Per derived slug that was found taken, the number its next numbered candidate tries first:
    // a title many posts share finds its slug in one step, not by reading every `base-N` taken.
    // Empty at first: a base's row is made the first time it is needed, from one read of the
    // slugs taken then. "C" collation on PostgreSQL, as post_slugs, so ranges order alike.
    const collate = t.kind === 'postgres' ? ' COLLATE "C"' : ''
    await sql.raw(`CREATE TABLE post_slug_counters (base TEXT${collate} PRIMARY KEY, next_n INTEGER NOT NULL)`).execute(db)
    // Numbers below a counter that a deletion freed: the first free one is the least of these.
    await sql.raw(`CREATE TABLE post_slug_gaps (base TEXT${collate} NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (base, n))`).execute(db)
  },
  down: forwardOnly,
})
