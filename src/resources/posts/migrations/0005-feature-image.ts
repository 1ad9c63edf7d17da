import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (_t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // The cover image, as its facts were when the post was written (JSON: id first), so that every
    // representation (lists, feeds, events, exports) is made without asking another resource.
    await sql`ALTER TABLE posts ADD COLUMN feature_image TEXT`.execute(db)
    await sql`ALTER TABLE posts ADD COLUMN feature_image_id TEXT`.execute(db)
    await sql`CREATE INDEX posts_feature_image_id_idx ON posts (feature_image_id)`.execute(db)
  },
  down: forwardOnly,
})
