import type { Expression, ExpressionBuilder, Kysely, Migration, Migrator, SqlBool } from 'kysely'
import type { ColumnTypes } from './migrations/column-types.ts'
import type { MigrationPlan } from './migrations/plan.ts'

/** Timestamps are text (ISO 8601) in SQLite and timestamptz in PostgreSQL; both read back as ISO strings. */
export type Timestamp = string | Date

export interface ApiKeysTable {
  id: string
  name: string
  scopes: string
  hash: string
  created_at: Timestamp
  revoked_at: Timestamp | null
  /** The person who made it (the identity facility's column); absent where people are not kept. */
  user_id?: string | null
}

export interface MetaTable {
  key: string
  value: string
}

export interface IdempotencyKeysTable {
  principal: string
  method: string
  path: string
  key: string
  fingerprint: string
  /** Who holds an unfinished record; a new claimant changes it, so a late owner cannot complete it. */
  token: string
  /** The instance that holds a running claim (its heartbeat lease is in `instances`); null on older records. */
  owner: string | null
  state: 'running' | 'done'
  locked_until: Timestamp
  status: number | null
  headers: string | null
  body: string | null
  created_at: Timestamp
  expires_at: Timestamp
}

/** Each running instance's heartbeat lease: it is alive while `lease_until` is ahead. */
export interface InstancesTable {
  id: string
  lease_until: Timestamp
}

/** Every table; a resource adds its own by declaration merging from its folder (see store/module.ts). */
export interface Database {
  api_keys: ApiKeysTable
  meta: MetaTable
  idempotency_keys: IdempotencyKeysTable
  instances: InstancesTable
}

/** What differs between the databases, supplied by each adapter folder. */
export interface DialectParts {
  readonly kind: 'sqlite' | 'postgres'
  /**
   * A condition true for rows of `table` whose text matches every word of `q`. The table's
   * migration makes the index: SQLite, an FTS5 table `<table>_fts` keyed by rowid = id;
   * PostgreSQL, a `search_vector` tsvector column. (`any`: the table is named at run time.)
   */
  textSearch (eb: ExpressionBuilder<any, any>, table: string, q: string): Expression<SqlBool>
  /** The value to bind for a timestamp column. */
  timestamp (d: Date): Timestamp
  /** Kysely's migrator takes a database lock, so instances starting together migrate once. */
  migrator (db: Kysely<Database>, plan: MigrationPlan): Migrator
  /** The column types shared migrations are written with. */
  readonly columnTypes: ColumnTypes
  /** 0001, written per database before migrations were shared (frozen). */
  readonly initialMigration: Migration
  /**
   * The statement that opens a unit of work. SQLite: `BEGIN IMMEDIATE`, which takes the write lock
   * at once (a deferred transaction upgrading later could fail with SQLITE_BUSY instead of waiting).
   * PostgreSQL: READ COMMITTED; writes are compare-and-set on a revision, so they need no more.
   */
  readonly begin: string
  /**
   * Whether a claim can lock its row and skip rows others hold (`FOR UPDATE SKIP LOCKED`, PostgreSQL),
   * so several workers claim different jobs at once. SQLite has one writer: a claim inside the unit of
   * work's BEGIN IMMEDIATE is already exclusive.
   */
  readonly skipLocked: boolean
  /**
   * Whether the units of work of one turn of the event loop share one transaction, each in its
   * own savepoint, and one commit (src/store/group-commit.ts). SQLite: yes, it has one connection
   * and one writer, and each commit syncs the disk. PostgreSQL: no, units run side by side on the
   * pool's connections, and a commit on one must not wait for another's.
   */
  readonly groupCommit: boolean
  /**
   * Where COMMIT does not wait for the disk itself: the sync that the driver runs after it, off the
   * event loop, before it gives the connection back (SQLite at `synchronous = FULL`,
   * src/store/sqlite/wal-sync.ts): how many syncs it has run, and `settled`, which resolves once
   * every commit made so far is on disk (a group waits for it before it starts: see
   * src/store/group-commit.ts); null where COMMIT is durable when it returns.
   */
  readonly durableCommit: { readonly syncs: number, settled: () => Promise<void> } | null
  /**
   * Signals to other instances (PostgreSQL: NOTIFY, which is delivered when the transaction
   * commits, and LISTEN on a connection of its own); null where only this process shares the
   * database (SQLite), whose signals the store delivers itself.
   */
  readonly signals: {
    notify (db: Kysely<Database>, channel: string): Promise<void>
    /** Calls `fn` on each signal, and after reconnecting (a signal may have been missed meanwhile). */
    listen (channel: string, fn: () => void): Promise<() => Promise<void>>
  } | null
  /**
   * Taken just before a unit of work writes its events, and held until it commits, so that units
   * writing events commit in the order of their event ids (PostgreSQL: a transaction-scoped
   * advisory lock; a sequence value is taken before commit, and without it a reader past id n
   * could miss an n − 1 committed later). Null when writers are serialised anyway (SQLite).
   */
  readonly eventsLock: string | null
  /**
   * Called once with the SQL of each prepared query (src/store/prepared.ts), whose text never
   * changes: PostgreSQL gives it a name, so that each connection parses and plans it once (pg's
   * named statements) instead of on every execution. Absent for SQLite, whose adapter already
   * caches its statements by text.
   */
  readonly nameStatement?: (sql: string) => void
}

const FIELD_NAMES = new Map<string, string>()

/** A record's name for a column (`created_at` → `createdAt`): records are their rows in camelCase. */
export function fieldName (column: string): string {
  let name = FIELD_NAMES.get(column)
  if (name === undefined) {
    name = column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
    FIELD_NAMES.set(column, name)
  }
  return name
}

const ISO_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

export function iso (v: Timestamp): string {
  // SQLite hands back what the store wrote (already this form); parsing it again per row showed in profiles.
  if (typeof v === 'string') return ISO_UTC_MS.test(v) ? v : new Date(v).toISOString()
  return v.toISOString()
}
