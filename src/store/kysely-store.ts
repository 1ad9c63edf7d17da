import { randomBytes } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { type Kysely, type Migration, sql } from 'kysely'
import { GroupCommit } from './group-commit.ts'
import * as m0002 from './migrations/0002-idempotency-keys.ts'
import { StoreCircuit } from './circuit.ts'
import * as mEvents from './migrations/core/0001-events.ts'
import * as mOwners from './migrations/core/0002-idempotency-owners.ts'
import * as mQueues from './migrations/core/0003-delivery-queues.ts'
import { type MigrationPlan, migrationPlan } from './migrations/plan.ts'
import type { StoreModule, UnitScope } from './module.ts'
import { ApiKeysRepository } from './repositories/api-keys-repository.ts'
import { IdempotencyRepository } from './repositories/idempotency-repository.ts'
import type { Repositories, Store, TransactionOptions, UnitOfWork } from './store.ts'
import { SYSTEM_ACTOR } from '../domain/principal.ts'
import type { Database, DialectParts } from './tables.ts'

export type { Database, DialectParts } from './tables.ts'

/** The core's repositories, then each module's under its name (bound to `unit` when in one). */
function repositories (db: Kysely<Database>, dialect: DialectParts, modules: readonly StoreModule[], unit?: UnitScope): Repositories {
  const core = {
    apiKeys: new ApiKeysRepository(db, dialect),
    idempotency: new IdempotencyRepository(db, dialect),
  }
  return Object.assign(core, Object.fromEntries(modules.map(m => [m.name, m.repository(db, dialect, unit)]))) as unknown as Repositories
}

/** The core's migrations: those that shipped before migrations were named per module keep their names; later ones are `core/NNNN-what`. */
function coreMigrations (dialect: DialectParts): Record<string, Migration> {
  return {
    '0001-initial': dialect.initialMigration,
    '0002-idempotency-keys': m0002.migration(dialect.columnTypes),
    'core/0001-events': mEvents.migration(dialect.columnTypes),
    'core/0002-idempotency-owners': mOwners.migration(dialect.columnTypes),
    'core/0003-delivery-queues': mQueues.migration(dialect.columnTypes),
  }
}

// The repositories are declared by Repositories, which resources extend from their folders.
export interface KyselyStore extends Repositories {}

/** A statement through a unit of work that has ended: refused, never run in another unit. */
export class UnitOfWorkEnded extends Error {
  constructor () {
    super('This unit of work has ended (committed or rolled back): its repositories take no more statements. Start another unit of work.')
    this.name = 'UnitOfWorkEnded'
  }
}

/**
 * `conn` for one unit of work's repositories: every use of it (a query built, a compiled one run,
 * `sql` executed on it) throws UnitOfWorkEnded once `unit.ended` is set.
 */
function guarded (conn: Kysely<Database>, unit: { ended: boolean }): Kysely<Database> {
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(conn, {
    get (target, prop) {
      if (unit.ended) throw new UnitOfWorkEnded()
      const value: unknown = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      // Kysely's methods read its private fields: they run on the instance itself, not the proxy.
      let fn = bound.get(prop)
      if (fn === undefined) bound.set(prop, fn = (value as (...a: unknown[]) => unknown).bind(target))
      return fn
    },
  })
}

/**
 * The Store both adapters share; each adapter supplies only its DialectParts. `modules` are the
 * resources' tables and repositories (the registry's, see src/context.ts).
 */
export class KyselyStore implements Store {
  readonly kind: 'sqlite' | 'postgres'
  private secret: Buffer | null = null
  /** Signals of this process's units of work, delivered to its own listeners without a round trip. */
  private readonly signals = new EventEmitter().setMaxListeners(0)
  /** Told after every unit of work that wrote events, or failed (afterEvents). */
  private readonly eventsEnded = new Set<() => void>()

  readonly watch: Pick<Repositories, 'events'>

  /** Units of work grouped per turn of the event loop, for a dialect that has one writer (SQLite). */
  private readonly groups: GroupCommit | null

  constructor (
    readonly db: Kysely<Database>,
    readonly dialect: DialectParts,
    readonly modules: readonly StoreModule[] = [],
    // A SQLite file has no network to be partitioned from: its circuit never opens.
    readonly circuit: StoreCircuit = new StoreCircuit({ failures: 0, probeEveryMs: 1000 }, async () => {}),
    watcher: Kysely<Database> = db
  ) {
    this.kind = dialect.kind
    this.watch = { events: repositories(watcher, dialect, modules).events }
    this.groups = dialect.groupCommit ? new GroupCommit(db, dialect.begin, dialect.durableCommit) : null
    Object.assign(this, repositories(db, dialect, modules))
  }

  async transaction<T> (fn: (uow: UnitOfWork) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    opts.signal?.throwIfAborted()
    const callbacks: (() => unknown)[] = []
    let events: { readonly written: number } | null = null
    const work = async (conn: Kysely<Database>): Promise<T> => {
      const beforeCommit: ((now: Date) => Promise<void>)[] = []
      const unit = { ended: false }
      const repos = repositories(guarded(conn, unit), this.dialect, this.modules, { actor: opts.actor ?? SYSTEM_ACTOR, beforeCommit: f => { beforeCommit.push(f) } })
      events = repos.events
      const signal = async (channel: string) => {
        callbacks.push(() => this.signals.emit(channel))
        await this.dialect.signals?.notify(conn, channel)
      }
      let result: T
      try {
        result = await fn({ ...repos, onCommit: f => { callbacks.push(f) }, signal })
        // Last, so a lock taken there (the event log's, for id order) is held only for the commit.
        const now = new Date()
        for (const f of beforeCommit) await f(now)
      } finally {
        // From here its repositories refuse every statement: one started late (work not awaited,
        // a unit kept past its end) would otherwise run in whatever holds the connection next.
        unit.ended = true
      }
      // An abandoned request (timed out, client gone) commits nothing, so its 503 never hides a change.
      opts.signal?.throwIfAborted()
      // From here the work is committed (or the whole commit fails): it can no longer be abandoned.
      opts.onCommitting?.()
      return result
    }
    let value: T
    try {
      value = this.groups !== null ? await this.groups.run(work) : await this.alone(work)
    } catch (err) {
      this.endedWithEvents()
      throw err
    }
    // Read through a cast: TypeScript does not see the assignment inside `work`.
    if (((events as { readonly written: number } | null)?.written ?? 0) > 0) this.endedWithEvents()
    for (const f of callbacks) {
      try {
        await f()
      } catch (err) {
        opts.onCallbackError?.(err)
      }
    }
    return value
  }

  afterEvents (fn: () => void): () => void {
    this.eventsEnded.add(fn)
    return () => { this.eventsEnded.delete(fn) }
  }

  private endedWithEvents (): void {
    for (const fn of this.eventsEnded) fn()
  }

  async listen (channel: string, fn: () => void): Promise<() => Promise<void>> {
    this.signals.on(channel, fn)
    const remote = await this.dialect.signals?.listen(channel, fn)
    return async () => {
      this.signals.off(channel, fn)
      await remote?.()
    }
  }

  /**
   * A unit of work in a transaction of its own: one connection for the whole unit (PostgreSQL's
   * pool hands out one per unit), with BEGIN/COMMIT issued here so the dialect chooses how to begin.
   */
  private async alone<T> (work: (conn: Kysely<Database>) => Promise<T>): Promise<T> {
    return await this.db.connection().execute(async conn => {
      await sql.raw(this.dialect.begin).execute(conn)
      try {
        const result = await work(conn)
        await sql.raw('COMMIT').execute(conn)
        return result
      } catch (err) {
        await sql.raw('ROLLBACK').execute(conn).catch(() => {})
        throw err
      }
    })
  }

  async serverSecret (): Promise<Buffer> {
    if (this.secret) return this.secret
    // Insert-if-absent, then read: every instance ends up with the first value written.
    await this.db.insertInto('meta')
      .values({ key: 'server_secret', value: randomBytes(32).toString('base64') })
      .onConflict(oc => oc.column('key').doNothing())
      .execute()
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', 'server_secret').executeTakeFirstOrThrow()
    this.secret = Buffer.from(row.value, 'base64')
    return this.secret
  }

  /** Every migration of the core and the modules, in the order they apply. */
  migrationPlan (): MigrationPlan {
    return migrationPlan(coreMigrations(this.dialect), this.modules, this.dialect.columnTypes)
  }

  async migrate (): Promise<void> {
    const { error, results } = await this.dialect.migrator(this.db, this.migrationPlan()).migrateToLatest()
    const failed = results?.find(r => r.status === 'Error')
    if (error) throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String((error as Error).message ?? error)}`)
  }

  async ping (): Promise<void> {
    await sql`select 1`.execute(this.db)
  }

  async close (): Promise<void> {
    this.circuit.stop()
    // A group of units still open commits (or fails) before the connection goes.
    await this.groups?.drain().catch(() => {})
    await this.db.destroy()
  }
}
