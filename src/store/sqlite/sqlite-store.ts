import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { setTimeout as sleep } from 'node:timers/promises'
import { Kysely, type LogConfig, Migrator, type MigrationResultSet, type SqliteDatabase, SqliteDialect, type SqliteStatement, sql } from 'kysely'
import { type Database, type DialectParts, KyselyStore } from '../kysely-store.ts'
import { type MigrationPlan, migratorProps } from '../migrations/plan.ts'
import type { StoreModule } from '../module.ts'
import * as m0001 from './migrations/0001-initial.ts'
import { readsAfterSync, type SyncLog, WalSync } from './wal-sync.ts'

/** FTS5 query syntax is not for end users: every word becomes a quoted term, all must match. */
export function ftsQuery (q: string): string {
  // FTS5 rejects NUL and an empty query; the HTTP layer refuses both, the store must not crash on them.
  const words = q.replaceAll('\u0000', ' ').split(/\s+/).filter(Boolean)
  return words.map(w => `"${w.replaceAll('"', '""')}"`).join(' ')
}

const MIGRATION_LOCK_WAIT_MS = 30_000

/**
 * Kysely takes no lock on SQLite (it assumes one connection), so two processes, or two stores in
 * one process, migrating one fresh file would both create the tables. Migrating inside
 * BEGIN IMMEDIATE holds the file's write lock; the busy wait is done here, asynchronously,
 * because better-sqlite3's own busy handler would block the event loop of a store that
 * holds the lock in the same process.
 */
class SqliteMigrator extends Migrator {
  constructor (private readonly database: SQLite.Database, db: Kysely<Database>, plan: MigrationPlan) {
    super({ db, ...migratorProps(plan) })
  }

  override async migrateToLatest (): Promise<MigrationResultSet> {
    const busyTimeout = this.database.pragma('busy_timeout', { simple: true }) as number
    this.database.pragma('busy_timeout = 0')
    try {
      const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS
      for (;;) {
        try {
          this.database.exec('BEGIN IMMEDIATE')
          break
        } catch (err) {
          if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err
          await sleep(20)
        }
      }
    } finally {
      this.database.pragma(`busy_timeout = ${busyTimeout}`)
    }
    try {
      const result = await super.migrateToLatest()
      this.database.exec(result.error ? 'ROLLBACK' : 'COMMIT')
      return result
    } catch (err) {
      if (this.database.inTransaction) this.database.exec('ROLLBACK')
      throw err
    }
  }
}

const STATEMENT_CACHE_SIZE = 200

/**
 * A function that makes the row object of a statement's `names` from its array of values: one
 * object literal per statement, so that every row of a statement shares one hidden class and each
 * statement's rows are made by code of their own (one loop shared by every statement would make
 * its property stores megamorphic).
 */
function rowMaker (names: readonly string[]): (values: unknown[]) => Record<string, unknown> {
  // JSON.stringify quotes any name; `__proto__` in a literal would set the prototype instead.
  if (names.includes('__proto__')) {
    return values => Object.fromEntries(names.map((n, i) => [n, values[i]]))
  }
  // eslint-disable-next-line no-new-func -- the names are quoted by JSON.stringify
  return new Function('v', `return { ${names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ')} }`) as (values: unknown[]) => Record<string, unknown>
}

/**
 * A statement that returns rows, read as arrays and made into objects here. better-sqlite3 builds
 * each row object in C++ one property at a time, which cost more than the query itself: 67 µs for
 * a page of 21 summaries, against 29 µs as arrays plus 2 µs for the objects made here; the
 * repository's page of 20 went from 46–51 µs to 32–33 µs. The objects are the same (a later column
 * of the same name wins, as there; test/store/sqlite-rows.test.ts).
 */
function readingArrays (statement: SQLite.Statement): SqliteStatement {
  const names = statement.columns().map(c => c.name)
  statement.raw(true)
  const toRow = rowMaker(names)
  return {
    reader: true,
    all: parameters => (statement.all(parameters) as unknown[][]).map(toRow),
    run: parameters => statement.run(parameters),
    iterate: function * (parameters) {
      for (const values of statement.iterate(parameters) as IterableIterator<unknown[]>) yield toRow(values)
    },
  }
}

/**
 * Kysely prepares every query anew; compiling the SQL was the largest single cost of a request.
 * The queries are few and parameterised, so their prepared statements are kept and reused
 * (better-sqlite3 statements are reusable; the driver runs one at a time).
 */
function withStatementCache (database: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>()
  return {
    close: () => { database.close() },
    prepare: (text: string) => {
      let statement = cache.get(text)
      if (statement === undefined) {
        const prepared = database.prepare(text)
        statement = prepared.reader ? readingArrays(prepared) : prepared as unknown as SqliteStatement
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
        cache.set(text, statement)
      }
      return statement
    },
  }
}

/**
 * SQLite alters no check in place. Its documented way for a change every row already satisfies
 * (https://sqlite.org/lang_altertable.html#otheralter) is to rewrite the table's schema text and bump
 * `schema_version`, which better-sqlite3 permits only in unsafe mode; no row is copied, so nothing
 * that refers to the table (foreign keys, triggers, the full-text index) is touched. Runs inside
 * the migration's transaction.
 */
function widenCheck (database: SQLite.Database, table: string, column: string, values: readonly string[]): void {
  const row = database.prepare("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?").get(table) as { sql: string } | undefined
  const check = new RegExp(`CHECK \\(${column} IN \\([^)]*\\)\\)`)
  if (row === undefined || !check.test(row.sql)) throw new Error(`${table}.${column} has no check to widen`)
  const text = row.sql.replace(check, `CHECK (${column} IN (${values.map(v => `'${v}'`).join(', ')}))`)
  const version = database.pragma('schema_version', { simple: true }) as number
  database.unsafeMode(true)
  try {
    database.pragma('writable_schema = ON')
    database.prepare("UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?").run(text, table)
    database.pragma(`schema_version = ${version + 1}`)
    database.pragma('writable_schema = OFF')
  } finally {
    database.unsafeMode(false)
  }
}

/**
 * The log's size, in pages, past which a COMMIT checkpoints it into the file (SQLite's default is
 * 1000, ~4 MB). better-sqlite3 runs that checkpoint inside the COMMIT, on the event loop: groups of
 * 10 inserts of ~2 KB rows, 600 COMMITs, had their longest at 8-10 ms and 12 over 5 ms at 1000
 * pages; at 250 the longest was 3 ms and none over 5 ms, for 10-17% more time in COMMITs in all
 * (the same runs, three each; 100 pages: 1.5x the time).
 */
const WAL_AUTOCHECKPOINT_PAGES = 250

export interface SqliteOptions {
  /**
   * In WAL mode, FULL syncs the log after every commit, off the event loop (./wal-sync.ts): an
   * acknowledged write survives a power cut. NORMAL syncs only at checkpoints: a power cut may
   * lose the last commits (never corrupt the file); a crash of the process alone loses nothing
   * either way.
   */
  synchronous?: 'FULL' | 'NORMAL'
  /**
   * At FULL, how the log is synced after each COMMIT, off the event loop (fdatasync on libuv's
   * thread pool by default; a test holds or fails it).
   */
  syncLog?: SyncLog
  /** The resources' tables and repositories (the registry's); none by default. */
  modules?: readonly StoreModule[]
  /** Kysely's query log: every statement as sent, with its parameters (tests read the SQL of a call). */
  log?: LogConfig
}

/**
 * The rows `database` has changed since it was opened (SQLite's total_changes()); null inside a
 * transaction, whose changes count once it commits.
 */
function changesOf (database: SQLite.Database): () => number | null {
  const statement = database.prepare('SELECT total_changes()').pluck()
  return () => database.inTransaction ? null : statement.get() as number
}

/**
 * Opens the embedded store: one SQLite file in WAL mode.
 *
 * @example
 * const store = openSqliteStore('./data/blog.db', { synchronous: 'FULL' })
 */
export function openSqliteStore (file: string, opts: SqliteOptions = {}): KyselyStore {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  const database = new SQLite(file)
  const wal = database.pragma('journal_mode = WAL', { simple: true }) === 'wal'
  // FULL's promise (a write is acknowledged once on disk) kept off the event loop: the connection
  // commits at NORMAL and the log is synced after COMMIT on the thread pool (./wal-sync.ts). A
  // file that cannot be in WAL mode (and :memory:) keeps SQLite's own sync in COMMIT.
  const durable = wal && opts.synchronous !== 'NORMAL' ? new WalSync(path.resolve(file), changesOf(database), opts.syncLog) : null
  database.pragma(`synchronous = ${opts.synchronous === 'NORMAL' || durable !== null ? 'NORMAL' : 'FULL'}`)
  database.pragma('busy_timeout = 5000')
  database.pragma('foreign_keys = ON')
  database.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
  const dialect = new SqliteDialect({ database: withStatementCache(database) })
  const db = new Kysely<Database>({ dialect: durable !== null ? readsAfterSync(dialect, durable) : dialect, ...(opts.log !== undefined ? { log: opts.log } : {}) })
  const parts: DialectParts = {
    kind: 'sqlite',
    textSearch: (eb, table, q) => {
      const match = ftsQuery(q)
      const fts = sql.raw(`${table}_fts`)
      return match === '' ? eb.lit(false) : eb(`${table}.id`, 'in', sql<number>`(SELECT rowid FROM ${fts} WHERE ${fts} MATCH ${match})`)
    },
    timestamp: d => d.toISOString(),
    begin: 'BEGIN IMMEDIATE',
    skipLocked: false,
    groupCommit: true,
    durableCommit: durable,
    signals: null,
    eventsLock: null,
    columnTypes: { kind: 'sqlite', id: 'INTEGER PRIMARY KEY AUTOINCREMENT', ref: 'INTEGER', timestamp: 'TEXT', bytes: 'BLOB', widenCheck: async (_db, table, column, values) => { widenCheck(database, table, column, values) } },
    initialMigration: m0001,
    migrator: (kdb, plan) => new SqliteMigrator(database, kdb, plan),
  }
  return new KyselyStore(db, parts, opts.modules)
}
