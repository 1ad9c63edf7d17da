import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely'
import { type Database, type DialectParts, KyselyStore } from '../kysely-store.ts'
import * as m0001 from './migrations/0001-initial.ts'

const migrations = { '0001-initial': m0001 }

/** FTS5 query syntax is not for end users: every word becomes a quoted term, all must match. */
export function ftsQuery (q: string): string {
  const words = q.split(/\s+/).filter(Boolean)
  return words.map(w => `"${w.replaceAll('"', '""')}"`).join(' ')
}

/**
 * Opens the embedded store: one SQLite file in WAL mode.
 *
 * @example
 * const store = openSqliteStore('./data/blog.db')
 */
export function openSqliteStore (file: string): KyselyStore {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  const database = new SQLite(file)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  database.pragma('foreign_keys = ON')
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) })
  const parts: DialectParts = {
    kind: 'sqlite',
    textSearch: (eb, q) => eb('posts.id', 'in', sql<number>`(SELECT rowid FROM posts_fts WHERE posts_fts MATCH ${ftsQuery(q)})`),
    timestamp: d => d.toISOString(),
    migrator: kdb => new Migrator({ db: kdb, provider: { getMigrations: async () => migrations } }),
  }
  return new KyselyStore(db, parts)
}
