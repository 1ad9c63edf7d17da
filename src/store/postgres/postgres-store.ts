import { Kysely, type LogConfig, Migrator, type MigrationResultSet, PostgresDialect, type PostgresPool, sql } from 'kysely'
import { createRequire } from 'node:module'
import type pg from 'pg'
import { isStoreUnavailable } from '../errors.ts'
import { type Database, type DialectParts, KyselyStore } from '../kysely-store.ts'
import { StoreCircuit } from '../circuit.ts'
import { type MigrationPlan, migratorProps } from '../migrations/plan.ts'
import type { StoreModule } from '../module.ts'
import * as m0001 from './migrations/0001-initial.ts'

export interface PostgresOptions {
  /** Connections this instance may hold at most (PG_POOL_MAX). */
  poolMax: number
  /** How long to wait for a connection, new or from a full pool, before failing (PG_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number
  /** Statements running longer are cancelled by the server (PG_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number
  /**
   * A request's whole budget (REQUEST_TIMEOUT_MS): no wait for the database outlasts it, so a
   * connection lost in a network partition is given up by the deadline of the request using it.
   */
  requestTimeoutMs?: number
  /** No single wait for the database (a connection, a statement's answer) outlasts this (STORE_BUDGET_MS). */
  storeBudgetMs?: number
  /** Consecutive failures that open the store's circuit (STORE_CIRCUIT_FAILURES; 0: never). */
  circuitFailures?: number
  /** The resources' tables and repositories (the registry's); none by default. */
  modules?: readonly StoreModule[]
  /** Kysely's query log: every statement as sent, with its parameters (tests read the SQL of a call). */
  log?: LogConfig
}

const APPLICATION_NAME = 'blog-post-service'

/**
 * pg, loaded when first used rather than with the service: ~15 MiB of memory a service on SQLite
 * does not need. pg is a CommonJS package, so it loads synchronously.
 */
const load = createRequire(import.meta.url)
let loaded: typeof pg | undefined
function pgLib (): typeof pg {
  loaded ??= load('pg') as typeof pg
  return loaded
}

/** Idle connections whose peer vanished are found by TCP keep-alive probes after this long. */
const KEEPALIVE_DELAY_MS = 10_000

/** While the store's circuit is open, how often a probe asks whether the database answers again. */
const PROBE_EVERY_MS = 1000

function poolConfig (url: string, opts: { max: number, connectTimeoutMs: number, statementTimeoutMs: number, requestTimeoutMs?: number, storeBudgetMs?: number }): pg.PoolConfig {
  const { types } = pgLib()
  const budget = Math.min(opts.requestTimeoutMs ?? Infinity, opts.storeBudgetMs ?? Infinity)
  // The server cancels at statement_timeout; this client-side bound also covers a server (or a
  // network path) that has stopped answering, which no server-side timeout can. Each statement
  // gets at most the store budget and the request's whole budget: a partition must not hold a
  // connection for longer.
  const readTimeout = opts.statementTimeoutMs === 0 ? 0 : Math.min(opts.statementTimeoutMs + opts.connectTimeoutMs, budget)
  return {
    connectionString: url,
    max: opts.max,
    connectionTimeoutMillis: Math.min(opts.connectTimeoutMs, budget),
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    application_name: APPLICATION_NAME,
    // 0 means no limit, for PostgreSQL and for pg alike.
    statement_timeout: opts.statementTimeoutMs,
    // A transaction left open by a stuck request must not hold its locks and connection for ever.
    idle_in_transaction_session_timeout: opts.statementTimeoutMs === 0 ? 0 : Math.max(opts.statementTimeoutMs, 10_000),
    query_timeout: readTimeout,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === types.builtins.INT8
          ? (v: string) => Number(v)
          : oid === types.builtins.TIMESTAMPTZ && format !== 'binary' ? timestamptzText : types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  }
}

/** PostgreSQL's text for a timestamptz in a UTC session: `2020-01-01 00:00:01.123456+00`. */
const PG_UTC = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/
let defaultTimestamptz: ((v: string) => unknown) | undefined

/**
 * A timestamptz as the text the service answers with (`2020-01-01T00:00:01.123Z`, what `iso()`
 * passes through), taken from PostgreSQL's own text: pg's default parser makes a Date of each
 * (a regular expression and a Date per value), which the store then turned back into this text,
 * three times for each row of a list page. The fraction is cut to milliseconds, as the Date did. A
 * session in another time zone (an offset other than +00), or a date the pattern does not cover,
 * gets pg's Date.
 */
export function timestamptzText (v: string): string | Date {
  const m = PG_UTC.exec(v)
  if (m === null) {
    const { types } = pgLib()
    const parse = defaultTimestamptz ??= types.getTypeParser(types.builtins.TIMESTAMPTZ, 'text')
    return parse(v) as Date
  }
  return `${m[1]}T${m[2]}.${m[3] === undefined ? '000' : (m[3] + '00').slice(0, 3)}Z`
}

function newPool (config: pg.PoolConfig): pg.Pool {
  const pool = new (pgLib().Pool)(config)
  // An idle client losing its connection (a restart, a failover) must not crash the process;
  // the pool drops it and the next checkout connects afresh.
  pool.on('error', () => {})
  return pool
}

/**
 * The names of the prepared queries' statements, by SQL text (DialectParts.nameStatement). A
 * query whose text has a name runs as pg's named statement: each connection parses and plans it
 * on first use and then only binds and executes it.
 */
class StatementNames {
  private readonly names = new Map<string, string>()

  add (sql: string): void {
    if (!this.names.has(sql)) this.names.set(sql, `blog_${this.names.size + 1}`)
  }

  of (sql: string): string | undefined {
    return this.names.get(sql)
  }
}

/**
 * A named statement a connection can no longer run as prepared: its result type changed under it
 * (0A000 "cached plan must not change result type", after another instance's migration altered a
 * table), or the server no longer knows it (26000, e.g. behind a pooler that reset the session).
 * The connection is destroyed, so the next one prepares the statement afresh.
 */
function staleStatement (err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === '0A000' || code === '26000'
}

/**
 * The pool as Kysely sees it. A connection that failed with a connection-level error (terminated
 * by a failover or restart, or a client-side read timeout) is destroyed on release instead of
 * going back to the pool, where the next request would fail on it too. Kysely's own release
 * cannot say that a connection is broken.
 */
function dialectPool (pool: pg.Pool, statements: StatementNames, circuit: StoreCircuit | null, budgetMs: number): PostgresPool {
  return {
    async connect () {
      let client: pg.PoolClient
      // One budget for the wait for a connection (a place in the pool, then perhaps a new
      // connection, each of which pg times on its own) and the first statement on it: a
      // partition costs a caller the budget once, not once per wait.
      const began = performance.now()
      try {
        client = await withinBudget(pool.connect(), budgetMs)
      } catch (err) {
        if (isStoreUnavailable(err)) circuit?.failed()
        throw err
      }
      let firstTimeout: number | undefined = budgetMs === 0 ? undefined : Math.max(1, Math.round(budgetMs - (performance.now() - began)))
      let broken: Error | undefined
      // pg-pool listens for errors only on idle clients: a socket dying while a client is checked
      // out (between statements, or just as it is handed out) would otherwise be an 'error' event
      // with no listener, which ends the process.
      const onError = (err: Error) => { broken = err }
      client.on('error', onError)
      const query = async (text: string, values: readonly unknown[]) => {
        const name = statements.of(text)
        // The first statement gets what the wait for its connection left of the budget; the rest the pool's own bound.
        const timeout = firstTimeout === undefined ? {} : { query_timeout: firstTimeout }
        firstTimeout = undefined
        try {
          const result = await client.query({ ...(name === undefined ? {} : { name }), text, values: values as unknown[], ...timeout })
          circuit?.succeeded()
          return result
        } catch (err) {
          // 57014 (statement_timeout) leaves the connection usable, and says nothing of the database's health.
          if (isStoreUnavailable(err) && (err as { code?: string }).code !== '57014') {
            broken = err as Error
            circuit?.failed()
          }
          if (name !== undefined && staleStatement(err)) broken = err as Error
          throw err
        }
      }
      return {
        query: query as never,
        release: () => {
          client.off('error', onError)
          client.release(broken)
        },
      }
    },
    end: async () => { await pool.end() },
  }
}

/**
 * `connecting`, or a connection timeout once `budgetMs` have passed (0: no bound). A connection
 * that arrives after that goes back to the pool unused.
 */
async function withinBudget (connecting: Promise<pg.PoolClient>, budgetMs: number): Promise<pg.PoolClient> {
  if (budgetMs === 0) return await connecting
  let timer: NodeJS.Timeout | undefined
  let late = false
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      late = true
      reject(new Error('timeout exceeded when trying to connect (STORE_BUDGET_MS)'))
    }, budgetMs)
  })
  connecting.then(client => { if (late) client.release() }, () => {})
  try {
    return await Promise.race([connecting, expired])
  } finally {
    clearTimeout(timer)
  }
}

const RELISTEN_MS = 1000

/**
 * LISTEN on a connection of its own (a pooled one would go back to the pool and stop hearing).
 * A lost connection is made again every second until it works; `fn` runs each time it starts
 * listening, since a signal sent meanwhile was missed.
 */
async function listen (url: string, connectTimeoutMs: number, channel: string, fn: () => void): Promise<() => Promise<void>> {
  let client: pg.Client | null = null
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const retry = () => {
    client = null
    if (!stopped) timer = setTimeout(() => { connect().catch(() => {}) }, RELISTEN_MS)
  }
  const connect = async () => {
    const c = new (pgLib().Client)({ connectionString: url, application_name: APPLICATION_NAME, connectionTimeoutMillis: connectTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS })
    c.on('error', () => {})
    c.on('notification', msg => { if (msg.channel === channel) fn() })
    try {
      await c.connect()
      await c.query(`LISTEN "${channel}"`)
    } catch {
      await c.end().catch(() => {})
      retry()
      return
    }
    if (stopped) {
      await c.end().catch(() => {})
      return
    }
    client = c
    c.once('end', retry)
    fn()
  }
  // Not awaited: a database unreachable at start-up must not hold up the app's readiness.
  connect().catch(() => {})
  return async () => {
    stopped = true
    clearTimeout(timer)
    const c = client
    client = null
    c?.removeAllListeners('end')
    await c?.end().catch(() => {})
  }
}

/**
 * Migrates on a connection of its own without a statement timeout: waiting for another instance's
 * migration lock, or building an index on a large table, may take longer than any request may.
 * Kysely holds a PostgreSQL advisory lock meanwhile, so instances starting together migrate once.
 */
class PostgresMigrator extends Migrator {
  constructor (private readonly url: string, private readonly connectTimeoutMs: number, db: Kysely<Database>, private readonly plan: MigrationPlan) {
    super({ db, ...migratorProps(plan) })
  }

  override async migrateToLatest (): Promise<MigrationResultSet> {
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: newPool(poolConfig(this.url, { max: 1, connectTimeoutMs: this.connectTimeoutMs, statementTimeoutMs: 0 })) }),
    })
    try {
      return await new Migrator({ db, ...migratorProps(this.plan) }).migrateToLatest()
    } finally {
      await db.destroy()
    }
  }
}

/**
 * Opens the PostgreSQL store: a bounded pg pool behind Kysely. BIGINT ids and counts come back as
 * numbers (they stay below 2^53), timestamps as Date, turned into ISO strings by the shared code.
 * `close()` ends the pool. Errors from an unreachable database are recognised by `isStoreUnavailable`.
 *
 * @example
 * const store = openPostgresStore('postgres://postgres@127.0.0.1:5432/blog', { poolMax: 10 })
 */
export function openPostgresStore (url: string, opts: PostgresOptions): KyselyStore {
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5_000
  const config = poolConfig(url, {
    max: opts.poolMax,
    connectTimeoutMs,
    statementTimeoutMs: opts.statementTimeoutMs ?? 15_000,
    ...(opts.requestTimeoutMs !== undefined ? { requestTimeoutMs: opts.requestTimeoutMs } : {}),
    ...(opts.storeBudgetMs !== undefined ? { storeBudgetMs: opts.storeBudgetMs } : {}),
  })
  const pool = newPool(config)
  const statements = new StatementNames()
  // The probe runs long after `db` below is made.
  const circuit = new StoreCircuit({ failures: opts.circuitFailures ?? 5, probeEveryMs: PROBE_EVERY_MS }, async () => { await sql`select 1`.execute(db) })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: dialectPool(pool, statements, circuit, config.query_timeout ?? 0) }), ...(opts.log !== undefined ? { log: opts.log } : {}) })
  const parts: DialectParts = {
    nameStatement: sql => { statements.add(sql) },
    kind: 'postgres',
    // PostgreSQL text cannot hold NUL; the HTTP layer refuses it, the store must not fail on it.
    textSearch: (eb, table, q) => sql<boolean>`${eb.ref(`${table}.search_vector`)} @@ plainto_tsquery('simple', ${q.replaceAll('\u0000', ' ')})`,
    timestamp: d => d,
    begin: 'BEGIN ISOLATION LEVEL READ COMMITTED',
    skipLocked: true,
    groupCommit: false,
    durableCommit: null,
    // One constant key for the whole deployment: 'events' in ASCII.
    eventsLock: 'SELECT pg_advisory_xact_lock(111559182283891)',
    signals: {
      notify: async (kdb, channel) => { await sql`SELECT pg_notify(${channel}, '')`.execute(kdb) },
      listen: async (channel, fn) => await listen(url, connectTimeoutMs, channel, fn),
    },
    columnTypes: {
      kind: 'postgres',
      id: 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY',
      ref: 'BIGINT',
      timestamp: 'TIMESTAMPTZ(3)',
      bytes: 'BYTEA',
      // A column's check is named <table>_<column>_check by PostgreSQL when the table is made.
      widenCheck: async (db, table, column, values) => {
        const name = `${table}_${column}_check`
        await sql.raw(`ALTER TABLE ${table} DROP CONSTRAINT ${name}, ADD CONSTRAINT ${name} CHECK (${column} IN (${values.map(v => `'${v}'`).join(', ')}))`).execute(db)
      },
    },
    initialMigration: m0001,
    migrator: (kdb, plan) => new PostgresMigrator(url, connectTimeoutMs, kdb, plan),
  }
  // The same pool for the event log's reader, whose polls the circuit does not count (Store.watch).
  const watcher = new Kysely<Database>({ dialect: new PostgresDialect({ pool: dialectPool(pool, statements, null, config.query_timeout ?? 0) }) })
  return new KyselyStore(db, parts, opts.modules, circuit, watcher)
}
