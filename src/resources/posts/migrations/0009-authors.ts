import { randomBytes } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import { type ColumnTypes, forwardOnly, type SharedMigration } from '../../../store/migrations/column-types.ts'
import { deriveSlug } from '../../../domain/slug.ts'

// Frozen: never edit a migration that has shipped; add a new one.
export const migration: SharedMigration = (t: ColumnTypes) => ({
  async up (db: Kysely<unknown>): Promise<void> {
    // A post's authors, in order: their slugs as the post shows them (JSON), and one row each by
    // place, with the user's id, so `?author=` and a user's deletion are index lookups.
    await sql.raw('ALTER TABLE posts ADD COLUMN authors TEXT NOT NULL DEFAULT \'[]\'').execute(db)
    await sql.raw(`CREATE TABLE post_authors (
      post_id ${t.ref} NOT NULL REFERENCES posts (id) ON DELETE CASCADE, position INTEGER NOT NULL,
      user_id TEXT NOT NULL, slug TEXT NOT NULL, PRIMARY KEY (post_id, position))`).execute(db)
    await sql.raw('CREATE INDEX post_authors_slug_idx ON post_authors (slug, post_id)').execute(db)
    await sql.raw('CREATE INDEX post_authors_user_idx ON post_authors (user_id)').execute(db)
    // `?author=` matches any listed author or a post's own author: no longer a range of this index.
    await sql.raw('DROP INDEX posts_author_created_at_idx').execute(db)

    // Each author name the posts already hold becomes a profile without sign-in (`inactive`), its
    // slug derived from the name (numbered when taken), and the author of those posts.
    const names = await sql<{ author: string }>`SELECT DISTINCT author FROM posts ORDER BY author`.execute(db)
    const taken = new Set((await sql<{ slug: string }>`SELECT slug FROM users`.execute(db)).rows.map(r => r.slug))
    const now = t.kind === 'sqlite' ? new Date().toISOString() : new Date()
    for (const { author } of names.rows) {
      const existing = await sql<{ id: string, slug: string }>`SELECT id, slug FROM users WHERE slug = ${author}`.execute(db)
      let user = existing.rows[0]
      if (user === undefined) {
        const base = deriveSlug(author)
        let slug = base
        for (let n = 2; taken.has(slug); n++) slug = `${base.slice(0, 95)}-${n}`
        taken.add(slug)
        user = { id: randomBytes(16).toString('base64url'), slug }
        await sql`INSERT INTO users (id, name, slug, role, status, created_at, updated_at)
          VALUES (${user.id}, ${author.slice(0, 100) || slug}, ${slug}, 'author', 'inactive', ${now}, ${now})`.execute(db)
      }
      await sql`UPDATE posts SET authors = ${JSON.stringify([user.slug])} WHERE author = ${author}`.execute(db)
      await sql`INSERT INTO post_authors (post_id, position, user_id, slug)
        SELECT id, 0, ${user.id}, ${user.slug} FROM posts WHERE author = ${author}`.execute(db)
    }
  },
  down: forwardOnly,
})
