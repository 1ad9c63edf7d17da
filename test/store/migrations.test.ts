import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type Kysely, Migrator, sql } from 'kysely'
import { STORE_MODULES } from '../../src/context.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import type { StoreModule } from '../../src/store/module.ts'
import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { freshDatabase, type StoreKind, storeKinds } from '../helper.ts'

const admin = { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' as const }

function open (kind: StoreKind, url: string, modules: readonly StoreModule[]): KyselyStore {
  return kind === 'sqlite' ? openSqliteStore(url.slice('sqlite:'.length), { modules }) : openPostgresStore(url, { poolMax: 2, modules })
}

/** A module that arrives later, with one table: `name/0001-…`. */
function tableModule (name: string): StoreModule {
  return {
    name,
    migrations: { [`${name}/0001-${name}`]: t => ({ async up (db: Kysely<unknown>) { await sql.raw(`CREATE TABLE ${name} (id ${t.id}, note TEXT NOT NULL)`).execute(db) } }) },
    repository: () => null,
  }
}

async function applied (store: KyselyStore): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY timestamp, name`.execute(store.db)
  return rows.map(r => r.name)
}

/** When each applied migration ran, by name. */
async function appliedAt (store: KyselyStore): Promise<Map<string, string>> {
  const { rows } = await sql<{ name: string, timestamp: string | Date }>`SELECT name, timestamp FROM kysely_migration`.execute(store.db)
  return new Map(rows.map(r => [r.name, new Date(r.timestamp).toISOString()]))
}

for (const kind of await storeKinds()) {
  describe(`migrations named per module [${kind}]`, () => {
    it('upgrade a database made by the migrations as they shipped, with its data, unchanged', async () => {
      const db = await freshDatabase(kind)
      const store = open(kind, db.url, STORE_MODULES)
      try {
        // The database as the service made it before migrations were named per module: 0001–0004, in name order.
        const plan = store.migrationPlan()
        const shipped = Object.fromEntries(Object.entries(plan.migrations).filter(([name]) => /^\d{4}-/.test(name)))
        assert.deepEqual(Object.keys(shipped).sort(), ['0001-initial', '0002-idempotency-keys', '0003-orders', '0004-exports'])
        const before = await new Migrator({ db: store.db, provider: { getMigrations: async () => shipped } }).migrateToLatest()
        assert.equal(before.error, undefined)
        // Written as that schema took them (today's repository writes columns added since).
        const at = new Date().toISOString()
        const ts = kind === 'postgres' ? sql`${at}::timestamptz` : sql`${at}`
        await sql`INSERT INTO posts (title, content, status, author, created_at, updated_at, revision) VALUES ('kept', 'as it was', 'draft', 'alice', ${ts}, ${ts}, 1)`.execute(store.db)
        const order = await store.orders.insert('alice', 'PROCESSING', { customer_email: 'a@example.com' }, [{ sku: 'x', quantity: 1 }], new Date())
        const job = await store.exports.create('root', { format: 'ndjson', filter: {}, callbackUrl: null }, { apiVersion: 1, linkBase: '' }, new Date())

        await store.migrate()
        assert.deepEqual((await applied(store)).slice(0, 4), ['0001-initial', '0002-idempotency-keys', '0003-orders', '0004-exports'])
        // Which ran first among the later ones is not asserted: Kysely ran media/0001 before posts/0001 although the plan lists it after.
        const times = await appliedAt(store)
        assert.deepEqual([...times.keys()].sort(), [...plan.order].sort(), 'then the later ones')
        const post = await store.posts.findById(1, admin)
        assert.deepEqual([post?.title, post?.content, post?.status, post?.author, post?.createdAt], ['kept', 'as it was', 'draft', 'alice', at])
        // posts/0002-editorial starts the history of a post written before revisions with what it is.
        const history = await sql<{ number: number, title: string, status: string, slug: string, editor: string }>`SELECT number, title, status, slug, editor FROM post_revisions WHERE post_id = 1`.execute(store.db)
        assert.deepEqual(history.rows.map(r => ({ ...r, number: Number(r.number) })), [{ number: 1, title: 'kept', status: 'draft', slug: 'kept', editor: 'alice' }])
        assert.deepEqual(await store.orders.find(order.id, admin), order)
        assert.deepEqual(await store.exports.findById(job.id, 'root'), job)
        assert.equal(await store.events.lastId(), 0, 'the event log, made by core/0001-events, is there')
      } finally {
        await store.close()
        await db.drop()
      }
    })

    it('applies a module\'s new migration even after a later module\'s was applied (branches land in any order)', async () => {
      const db = await freshDatabase(kind)
      const first = open(kind, db.url, [...STORE_MODULES, tableModule('zebras')])
      try {
        await first.migrate()
      } finally {
        await first.close()
      }
      // `alphas` comes before `zebras` in both the registry's order and the alphabet, but lands later.
      const second = open(kind, db.url, [...STORE_MODULES, tableModule('alphas'), tableModule('zebras')])
      try {
        await second.migrate()
        const names = await applied(second)
        assert.ok(names.indexOf('alphas/0001-alphas') > names.indexOf('zebras/0001-zebras'))
        await sql`INSERT INTO alphas (note) VALUES ('made')`.execute(second.db)
        await second.migrate()
        assert.deepEqual(await applied(second), names, 'applying again changes nothing')
      } finally {
        await second.close()
        await db.drop()
      }
    })

    it('refuses a module\'s migration not named after the module', async () => {
      const db = await freshDatabase(kind)
      const stray = { ...tableModule('tickets'), migrations: { '0005-tickets': tableModule('tickets').migrations['tickets/0001-tickets']! } }
      const store = open(kind, db.url, [...STORE_MODULES, stray])
      try {
        await assert.rejects(store.migrate(), /migration 0005-tickets of tickets: name it tickets\/NNNN-what/)
      } finally {
        await store.close()
        await db.drop()
      }
    })
  })
}
