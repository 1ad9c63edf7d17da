import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    await sql.raw(`CREATE TABLE orders (
      id ${t.id}, owner TEXT NOT NULL, customer_email TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('PROCESSING', 'CANCELLED')),
      created_at ${t.timestamp} NOT NULL, updated_at ${t.timestamp} NOT NULL, revision INTEGER NOT NULL DEFAULT 1)`).execute(db)
    await sql.raw(`CREATE TABLE order_items (
      order_id ${t.ref} NOT NULL REFERENCES orders (id) ON DELETE CASCADE, position INTEGER NOT NULL,
      sku TEXT NOT NULL, quantity INTEGER NOT NULL CHECK (quantity >= 1), PRIMARY KEY (order_id, position))`).execute(db)
    for (const cols of ['owner, created_at, id', 'owner, status, created_at, id', 'created_at, id', 'status, created_at, id']) {
      await sql.raw(`CREATE INDEX orders_${cols.replaceAll(', ', '_')}_idx ON orders (${cols})`).execute(db)
    }
  },
  down: forwardOnly,
})
