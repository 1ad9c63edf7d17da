import type { Kysely, Migration } from 'kysely'

/** The column types that differ between the databases; shared migrations are written with these. */
export interface ColumnTypes {
  /** The database, for the rare statement that differs beyond a column type (full-text search). */
  readonly kind: 'sqlite' | 'postgres'
  /** An auto-assigned primary key that is never reused. */
  readonly id: string
  /** A column referring to such a key, or any 64-bit integer. */
  readonly ref: string
  /** A point in time with millisecond precision. */
  readonly timestamp: string
  /** Raw bytes. */
  readonly bytes: string
  /**
   * Lets `table.column`'s check `column IN (…)` accept `values` (a superset of what it accepted,
   * so every row still passes). Neither database alters a check in place the same way.
   */
  widenCheck (db: Kysely<unknown>, table: string, column: string, values: readonly string[]): Promise<void>
}

/** A migration written once for both databases. */
export type SharedMigration = (t: ColumnTypes) => Migration

export async function forwardOnly (): Promise<void> {
  throw new Error('migrations are forward-only')
}
