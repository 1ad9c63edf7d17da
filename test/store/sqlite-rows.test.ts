import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type Kysely, sql } from 'kysely'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { loadConfig, openStore } from '../../src/context.ts'
import { freshDatabase } from '../helper.ts'

// The SQLite adapter reads rows as arrays and makes their objects itself (src/store/sqlite): the
// objects must be what better-sqlite3 would have made.
describe('rows read from SQLite', () => {
  let store: KyselyStore
  let drop: () => Promise<void>
  before(async () => {
    const db = await freshDatabase('sqlite')
    drop = db.drop
    store = await openStore(loadConfig({ DATABASE_URL: db.url })) as KyselyStore
  })
  after(async () => {
    await store.close()
    await drop()
  })

  it('are plain objects with each column as a property, in order, with its SQLite value', async () => {
    const { rows } = await sql<Record<string, unknown>>`SELECT 1 AS "n", 'x' AS "text", NULL AS "nothing", 2.5 AS "real", X'0102' AS "blob", 'q"u\\o' AS "odd ""name"""`.execute(store.db)
    assert.equal(rows.length, 1)
    const row = rows[0]!
    assert.equal(Object.getPrototypeOf(row), Object.prototype)
    assert.deepEqual(Object.keys(row), ['n', 'text', 'nothing', 'real', 'blob', 'odd "name"'])
    assert.deepEqual({ ...row, blob: [...(row.blob as Uint8Array)] }, { n: 1, text: 'x', nothing: null, real: 2.5, blob: [1, 2], 'odd "name"': 'q"u\\o' })
  })

  it('keep the last of two columns of one name, and make __proto__ an own property, not the prototype', async () => {
    const { rows } = await sql<Record<string, unknown>>`SELECT 1 AS "a", 2 AS "__proto__", 3 AS "a"`.execute(store.db)
    const row = rows[0]!
    assert.equal(row.a, 3)
    assert.equal(Object.getPrototypeOf(row), Object.prototype)
    assert.deepEqual(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, 2)
  })

  it('come one per row, from a stream too, and RETURNING gives the written row', async () => {
    const db = store.db as unknown as Kysely<{ numbers: { i: number, label: string } }>
    await sql`CREATE TABLE numbers (i INTEGER, label TEXT)`.execute(db)
    await sql`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 50) INSERT INTO numbers SELECT i, 'n' || i FROM s`.execute(db)
    const rows = await db.selectFrom('numbers').selectAll().orderBy('i').execute()
    assert.deepEqual(rows, Array.from({ length: 50 }, (_, k) => ({ i: k + 1, label: `n${k + 1}` })))
    const streamed: unknown[] = []
    for await (const row of db.selectFrom('numbers').select('label').where('i', '<=', 3).orderBy('i').stream()) streamed.push(row)
    assert.deepEqual(streamed, [{ label: 'n1' }, { label: 'n2' }, { label: 'n3' }])
    assert.deepEqual(await db.insertInto('numbers').values({ i: 51, label: 'n51' }).returningAll().executeTakeFirst(), { i: 51, label: 'n51' })
  })
})
