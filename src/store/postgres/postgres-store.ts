import { Kysely, Migrator, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { type Database, type DialectParts, KyselyStore } from '../kysely-store.ts'
import * as m0001 from './migrations/0001-initial.ts'

const migrations = { '0001-initial': m0001 }

export interface PostgresOptions {
  poolMax: number
  /** Statements running longer are cancelled by the server. */
  statementTimeoutMs?: number
}

/**
 * Opens the PostgreSQL store: a pg pool behind Kysely. BIGINT ids come back as numbers
 * (ids stay below 2^53), timestamps as Date and are turned into ISO strings by the shared code.
 *
 * @example
 * const store = openPostgresStore('postgres://postgres@127.0.0.1:5432/blog', { poolMax: 10 })
 */
export function openPostgresStore (url: string, opts: PostgresOptions): KyselyStore {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolMax,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: opts.statementTimeoutMs ?? 15_000,
    application_name: 'blog-post-service',
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  })
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  const parts: DialectParts = {
    kind: 'postgres',
    textSearch: (eb, q) => sql<boolean>`${eb.ref('posts.search_vector' as never)} @@ plainto_tsquery('simple', ${q})`,
    timestamp: d => d,
    migrator: kdb => new Migrator({ db: kdb, provider: { getMigrations: async () => migrations } }),
  }
  return new KyselyStore(db, parts)
}
