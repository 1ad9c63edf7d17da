import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { isStoreUnavailable } from '../../src/store/errors.ts'
import { openStore, STORE_MODULES } from '../../src/context.ts'
import { openPostgresStore, timestamptzText } from '../../src/store/postgres/postgres-store.ts'
import { freePort, freshDatabase, PG_ADMIN_URL, postgresAvailable } from '../helper.ts'
import { until } from '../support/poll.ts'

describe('isStoreUnavailable', () => {
  it('recognises unreachable, overloaded and shutting-down databases, and nothing else', () => {
    for (const code of ['ECONNREFUSED', 'ETIMEDOUT', '57P01', '57P03', '08006', '53300', '57014', '55000', '3D000', '28P01', 'SQLITE_BUSY', 'SQLITE_IOERR_WRITE']) {
      assert.equal(isStoreUnavailable(Object.assign(new Error('x'), { code })), true, code)
    }
    assert.equal(isStoreUnavailable(new Error('timeout exceeded when trying to connect')), true)
    assert.equal(isStoreUnavailable(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })])), true)
    assert.equal(isStoreUnavailable(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: '57P01' }) })), true)
    for (const code of ['23505', '42P01', '22P02', 'SQLITE_CONSTRAINT_UNIQUE', undefined]) {
      assert.equal(isStoreUnavailable(Object.assign(new Error('x'), { code })), false, String(code))
    }
    assert.equal(isStoreUnavailable(null), false)
    assert.equal(isStoreUnavailable('ECONNREFUSED'), false)
  })
})

describe('timestamptzText (PostgreSQL timestamps as the service writes them)', () => {
  const viaDate = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text')
  it('gives the ISO text of a UTC session\'s value, cut to milliseconds as pg\'s Date was', () => {
    for (const [text, iso] of [
      ['2020-01-01 00:00:01+00', '2020-01-01T00:00:01.000Z'],
      ['2020-01-01 00:00:01.5+00', '2020-01-01T00:00:01.500Z'],
      ['2026-11-25 02:31:40.263+00', '2026-11-25T02:31:40.263Z'],
      ['1999-12-31 23:59:59.999999+00', '1999-12-31T23:59:59.999Z'],
      ['2024-02-29 12:00:00.04+00', '2024-02-29T12:00:00.040Z'],
    ]) {
      assert.equal(timestamptzText(text!), iso, text)
      assert.equal((viaDate(text!) as Date).toISOString(), iso, `pg's own parser agrees on ${text}`)
    }
  })
  it('leaves other zones, infinity and years past 9999 to pg\'s Date', () => {
    for (const text of ['2020-01-01 01:00:01+01', '2020-01-01 00:00:01.25-05:30', 'infinity', '12020-01-01 00:00:00+00']) {
      assert.equal(typeof timestamptzText(text), typeof viaDate(text), text)
      assert.deepEqual(timestamptzText(text), viaDate(text), text)
    }
  })
})

const reachable = await postgresAvailable()

describe('PostgreSQL adapter', { skip: !reachable && 'PostgreSQL is unreachable' }, () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>
  let admin: pg.Client
  before(async () => {
    db = await freshDatabase('postgres')
    admin = new pg.Client({ connectionString: PG_ADMIN_URL })
    await admin.connect()
  })
  after(async () => {
    await admin.end()
    await db.drop()
  })

  const dbName = () => new URL(db.url).pathname.slice(1)
  async function connections (): Promise<number> {
    const r = await admin.query<{ n: string }>("select count(*) as n from pg_stat_activity where datname = $1 and application_name = 'blog-post-service'", [dbName()])
    return Number(r.rows[0]!.n)
  }

  it('fails fast with a recognisable error when the database is unreachable', async () => {
    const url = new URL(db.url)
    url.port = String(await freePort())
    const store = await openStore({ databaseUrl: url.toString(), pgPoolMax: 2, pgConnectTimeoutMs: 1000 })
    try {
      const err = await store.ping().then(() => null, (e: unknown) => e)
      assert.ok(err, 'ping must fail')
      assert.equal(isStoreUnavailable(err), true, `not recognised: ${String(err)} ${(err as { code?: string }).code}`)
      const err2 = await store.posts.findById(1, null).then(() => null, (e: unknown) => e)
      assert.equal(isStoreUnavailable(err2), true)
    } finally {
      await store.close()
    }
  })

  it('holds no more connections than PG_POOL_MAX, and none once closed', async () => {
    const store = await openStore({ databaseUrl: db.url, pgPoolMax: 2 })
    await store.migrate()
    const peak: number[] = []
    const work = Promise.all(Array.from({ length: 6 }, async () => {
      await store.ping()
      await (store as unknown as { db: import('kysely').Kysely<unknown> }).db.executeQuery(
        (await import('kysely')).CompiledQuery.raw('select pg_sleep(0.3)'))
    }))
    for (let i = 0; i < 5; i++) {
      // Real time on purpose: samples of the connections while the 0.3 s statements run.
      await sleep(100)
      peak.push(await connections())
    }
    await work
    assert.ok(Math.max(...peak) >= 1, 'the store was connected')
    assert.ok(Math.max(...peak) <= 2, `at most 2 connections, saw ${peak.join(',')}`)
    await store.close()
    await until(async () => await connections() === 0, 'close() to end the pool', 2000, 100)
  })

  it('cancels a statement past PG_STATEMENT_TIMEOUT_MS with a recognisable error', async () => {
    const store = await openStore({ databaseUrl: db.url, pgPoolMax: 1, pgStatementTimeoutMs: 200 })
    try {
      const kdb = (store as unknown as { db: import('kysely').Kysely<unknown> }).db
      const err = await kdb.executeQuery((await import('kysely')).CompiledQuery.raw('select pg_sleep(5)')).then(() => null, (e: unknown) => e)
      assert.equal((err as { code?: string })?.code, '57014')
      assert.equal(isStoreUnavailable(err), true)
      await store.ping()
    } finally {
      await store.close()
    }
  })

  it('recovers after its connections are terminated (a failover or restart)', async () => {
    const store = openPostgresStore(db.url, { poolMax: 2, modules: STORE_MODULES })
    try {
      await store.migrate()
      const running = store.db.executeQuery((await import('kysely')).CompiledQuery.raw('select pg_sleep(5)')).then(() => null, (e: unknown) => e)
      await until(async () => (await admin.query("select 1 from pg_stat_activity where datname = $1 and state = 'active' and query like 'select pg_sleep%'", [dbName()])).rowCount === 1, 'the statement to run')
      await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'blog-post-service'", [dbName()])
      const err = await running
      assert.ok(err, 'the running statement fails')
      assert.equal(isStoreUnavailable(err), true, `not recognised: ${String(err)} ${(err as { code?: string }).code}`)
      await store.ping()
      assert.equal(await store.posts.findById(1, null), null)
    } finally {
      await store.close()
    }
  })

  it('survives a connection dying while checked out between statements', async () => {
    const store = openPostgresStore(db.url, { poolMax: 1, modules: STORE_MODULES })
    try {
      await store.migrate()
      await store.db.connection().execute(async conn => {
        const { CompiledQuery } = await import('kysely')
        await conn.executeQuery(CompiledQuery.raw('select 1'))
        await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'blog-post-service'", [dbName()])
        // Without a listener on the checked-out client, its 'error' event would end the process here.
        // Real time on purpose: the event comes when the socket closes, and nothing else shows it came.
        await sleep(300)
      })
      await store.ping()
      assert.equal(await store.posts.findById(1, null), null)
    } finally {
      await store.close()
    }
  })

  it('migrates with no statement timeout on a connection of its own, closed afterwards', async () => {
    const fresh = await freshDatabase('postgres')
    const store = await openStore({ databaseUrl: fresh.url, pgPoolMax: 1, pgStatementTimeoutMs: 1 })
    try {
      await store.migrate()
      const c = new pg.Client({ connectionString: fresh.url })
      await c.connect()
      const r = await c.query("select count(*)::int as n from information_schema.tables where table_name in ('posts', 'api_keys', 'meta')")
      await c.end()
      assert.equal(r.rows[0].n, 3)
    } finally {
      await store.close()
      await fresh.drop()
    }
  })
})
