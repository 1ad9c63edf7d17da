import { randomBytes } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import { ApiKeysRepository } from './repositories/api-keys-repository.ts'
import { ExportsRepository } from './repositories/exports-repository.ts'
import { IdempotencyRepository } from './repositories/idempotency-repository.ts'
import { OrdersRepository } from './repositories/orders-repository.ts'
import { PostsRepository } from './repositories/posts-repository.ts'
import { WebhooksRepository } from './repositories/webhooks-repository.ts'
import type { ApiKeyStore, ExportStore, IdempotencyStore, OrderStore, PostStore, Repositories, Store, TransactionOptions, UnitOfWork, WebhookStore } from './store.ts'
import type { Database, DialectParts } from './tables.ts'

export type { Database, DialectParts } from './tables.ts'

function repositories (db: Kysely<Database>, dialect: DialectParts): Repositories {
  return {
    posts: new PostsRepository(db, dialect),
    orders: new OrdersRepository(db, dialect),
    apiKeys: new ApiKeysRepository(db, dialect),
    idempotency: new IdempotencyRepository(db, dialect),
    exports: new ExportsRepository(db, dialect),
    webhooks: new WebhooksRepository(db, dialect),
  }
}

/** The Store both adapters share; each adapter supplies only its DialectParts. */
export class KyselyStore implements Store {
  readonly kind: 'sqlite' | 'postgres'
  readonly posts: PostStore
  readonly orders: OrderStore
  readonly apiKeys: ApiKeyStore
  readonly idempotency: IdempotencyStore
  readonly exports: ExportStore
  readonly webhooks: WebhookStore
  private secret: Buffer | null = null

  constructor (readonly db: Kysely<Database>, readonly dialect: DialectParts) {
    this.kind = dialect.kind
    const repos = repositories(db, dialect)
    this.posts = repos.posts
    this.orders = repos.orders
    this.apiKeys = repos.apiKeys
    this.idempotency = repos.idempotency
    this.exports = repos.exports
    this.webhooks = repos.webhooks
  }

  async transaction<T> (fn: (uow: UnitOfWork) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    opts.signal?.throwIfAborted()
    const callbacks: (() => unknown)[] = []
    // One connection for the whole unit of work (on SQLite, the one connection, held by Kysely's
    // mutex until the end), with BEGIN/COMMIT issued here so the dialect chooses how to begin.
    const value = await this.db.connection().execute(async conn => {
      await sql.raw(this.dialect.begin).execute(conn)
      try {
        const result = await fn({ ...repositories(conn, this.dialect), onCommit: f => { callbacks.push(f) } })
        // An abandoned request (timed out, client gone) commits nothing, so its 503 never hides a change.
        opts.signal?.throwIfAborted()
        await sql.raw('COMMIT').execute(conn)
        return result
      } catch (err) {
        await sql.raw('ROLLBACK').execute(conn).catch(() => {})
        throw err
      }
    })
    for (const f of callbacks) {
      try {
        await f()
      } catch (err) {
        opts.onCallbackError?.(err)
      }
    }
    return value
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

  async migrate (): Promise<void> {
    const { error, results } = await this.dialect.migrator(this.db).migrateToLatest()
    const failed = results?.find(r => r.status === 'Error')
    if (error) throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String((error as Error).message ?? error)}`)
  }

  async ping (): Promise<void> {
    await sql`select 1`.execute(this.db)
  }

  async close (): Promise<void> {
    await this.db.destroy()
  }
}
