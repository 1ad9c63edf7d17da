import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type LogEvent, sql } from 'kysely'
import { loopStalledMs } from '../../src/loop-stalls.ts'
import { isStoreUnavailable } from '../../src/store/errors.ts'
import { GroupCommit } from '../../src/store/group-commit.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { STORE_MODULES } from '../../src/context.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { freshDatabase } from '../helper.ts'
import { createPost } from '../support/posts.ts'

const admin = { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' as const }

/**
 * SQLite's units of work of one turn of the event loop share one transaction and one COMMIT (one
 * sync of the disk), each in its own savepoint (src/store/group-commit.ts). What must hold: each
 * unit is still all or nothing on its own, nobody is told "done" before the COMMIT, and nobody
 * outside reads what is not committed.
 */
describe('group commit [sqlite]', () => {
  let store: KyselyStore
  let drop: () => Promise<void>
  const statements: string[] = []
  before(async () => {
    const db = await freshDatabase('sqlite')
    drop = db.drop
    store = openSqliteStore(db.url.slice('sqlite:'.length), { modules: STORE_MODULES, log: (e: LogEvent) => { statements.push(e.query.sql) } })
    await store.migrate()
  })
  after(async () => {
    await store.close()
    await drop()
  })

  async function titles (): Promise<string[]> {
    return (await store.posts.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 100 }, admin)).items.map(p => p.title)
  }
  const count = (text: string) => statements.filter(s => s === text).length

  it('commits the units of one turn with one COMMIT, each in its own savepoint', async () => {
    statements.length = 0
    const stalledBefore = loopStalledMs()
    const ids = await Promise.all(Array.from({ length: 10 }, async (_, i) => await store.transaction(async uow => {
      return (await createPost(uow, { title: `group ${i}` })).id
    })))
    assert.equal(new Set(ids).size, 10)
    assert.equal(count('BEGIN IMMEDIATE'), 1)
    assert.equal(count('COMMIT'), 1)
    assert.equal(count('SAVEPOINT unit'), 10)
    assert.equal(count('RELEASE unit'), 10)
    // The COMMIT blocked the loop while it synced; load shedding leaves that time out of waits.
    assert.ok(loopStalledMs() > stalledBefore)
    const all = await titles()
    for (let i = 0; i < 10; i++) assert.ok(all.includes(`group ${i}`))
    // Units of a later turn go to a new group.
    statements.length = 0
    await store.transaction(async uow => await createPost(uow, { title: 'next turn' }))
    assert.equal(count('COMMIT'), 1)
  })

  it('rolls back a failing or abandoned unit alone; the others of its group commit', async () => {
    const abandon = new AbortController()
    const outcomes = await Promise.allSettled([
      store.transaction(async uow => await createPost(uow, { title: 'kept a' })),
      store.transaction(async uow => {
        await createPost(uow, { title: 'failed' })
        throw new Error('the second step failed')
      }),
      store.transaction(async uow => {
        const p = await createPost(uow, { title: 'abandoned' })
        abandon.abort(new Error('the client went away'))
        return p
      }, { signal: abandon.signal }),
      store.transaction(async uow => await createPost(uow, { title: 'kept b' })),
    ])
    assert.deepEqual(outcomes.map(o => o.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /the second step failed/)
    const all = await titles()
    assert.ok(all.includes('kept a') && all.includes('kept b'))
    assert.ok(!all.includes('failed') && !all.includes('abandoned'))
  })

  it('answers a unit only after the COMMIT, and makes readers outside the group wait for it', async () => {
    statements.length = 0
    let answeredAt = -1
    // The unit holds its group open (an await on something else, as a request's work may) until
    // the reader has asked.
    let go!: () => void
    const gate = new Promise<void>(resolve => { go = resolve })
    let begun!: () => void
    const inside = new Promise<void>(resolve => { begun = resolve })
    const write = store.transaction(async uow => {
      const post = await createPost(uow, { title: 'durable' })
      begun()
      await gate
      return post
    }).then(() => { answeredAt = statements.length })
    await inside
    const read = titles()
    go()
    const [, seen] = await Promise.all([write, read])
    // Kysely logs a statement once it has run: the COMMIT was done when the write was answered.
    const commitAt = statements.indexOf('COMMIT')
    assert.ok(commitAt > 0, statements.join(' | '))
    assert.ok(answeredAt > commitAt, `answered after ${answeredAt} statements, the COMMIT was #${commitAt + 1}`)
    // The reader asked while the group held the connection; its SELECT ran after the COMMIT, and saw the write.
    // (The unit's own look-up of its slug, in post_slugs, is inside the transaction.)
    const selects = statements.map((s, i) => /^select .* from "posts"/i.test(s) ? i : -1).filter(i => i >= 0)
    assert.ok(selects.length > 0 && selects.every(i => i > commitAt), statements.join(' | '))
    assert.ok(seen.includes('durable'))
  })

  it('fails every unit of a group when the COMMIT fails, and keeps none of their writes', async () => {
    // A deferred foreign key is checked at COMMIT: one unit's write makes the COMMIT fail.
    await sql`CREATE TABLE gc_parent (id INTEGER PRIMARY KEY)`.execute(store.db)
    await sql`CREATE TABLE gc_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES gc_parent (id) DEFERRABLE INITIALLY DEFERRED)`.execute(store.db)
    const groups = new GroupCommit(store.db, 'BEGIN IMMEDIATE')
    const outcomes = await Promise.allSettled([
      groups.run(async conn => await sql`INSERT INTO gc_parent (id) VALUES (1)`.execute(conn)),
      groups.run(async conn => await sql`INSERT INTO gc_child (id, parent) VALUES (1, 999)`.execute(conn)),
      groups.run(async conn => await sql`INSERT INTO gc_parent (id) VALUES (2)`.execute(conn)),
    ])
    assert.deepEqual(outcomes.map(o => o.status), ['rejected', 'rejected', 'rejected'])
    for (const o of outcomes) assert.match(String((o as PromiseRejectedResult).reason), /FOREIGN KEY/)
    const rows = await sql<{ n: number }>`SELECT (SELECT count(*) FROM gc_parent) + (SELECT count(*) FROM gc_child) AS n`.execute(store.db)
    assert.equal(Number(rows.rows[0]!.n), 0)
    // The connection is usable again: the next group commits.
    await groups.run(async conn => await sql`INSERT INTO gc_parent (id) VALUES (3)`.execute(conn))
    assert.equal(Number((await sql<{ n: number }>`SELECT count(*) AS n FROM gc_parent`.execute(store.db)).rows[0]!.n), 1)
  })

  it('fails every unit of a group when SQLite rolls the transaction back under one of them, with a store error (503) for the others', async () => {
    await sql`CREATE TABLE gc_rows (id INTEGER PRIMARY KEY)`.execute(store.db)
    const groups = new GroupCommit(store.db, 'BEGIN IMMEDIATE')
    const outcomes = await Promise.allSettled([
      groups.run(async conn => await sql`INSERT INTO gc_rows (id) VALUES (1)`.execute(conn)),
      // What SQLite does on its own after some errors (a full disk, an I/O error).
      groups.run(async conn => await sql`ROLLBACK`.execute(conn)),
      groups.run(async conn => await sql`INSERT INTO gc_rows (id) VALUES (2)`.execute(conn)),
    ])
    assert.deepEqual(outcomes.map(o => o.status), ['rejected', 'rejected', 'rejected'])
    for (const i of [0, 2]) {
      const reason = (outcomes[i] as PromiseRejectedResult).reason as Error & { code?: string }
      assert.equal(reason.code, 'SQLITE_ABORT_ROLLBACK')
      assert.ok(isStoreUnavailable(reason), 'answered 503, not 500')
    }
    assert.equal(Number((await sql<{ n: number }>`SELECT count(*) AS n FROM gc_rows`.execute(store.db)).rows[0]!.n), 0)
  })

  it('settles every unit when the store is closed with a group open', async () => {
    const db = await freshDatabase('sqlite')
    const other = openSqliteStore(db.url.slice('sqlite:'.length), { modules: STORE_MODULES })
    try {
      await other.migrate()
      const pending = Array.from({ length: 5 }, async (_, i) => await other.transaction(async uow => await createPost(uow, { title: `closing ${i}` })))
      const closed = other.close()
      const outcomes = await Promise.race([
        Promise.allSettled(pending),
        new Promise<'hung'>(resolve => setTimeout(() => { resolve('hung') }, 5000)),
      ])
      assert.notEqual(outcomes, 'hung')
      await closed
      // The open group was drained before the connection closed: its units committed.
      assert.deepEqual((outcomes as PromiseSettledResult<unknown>[]).map(o => o.status), Array(5).fill('fulfilled'))
    } finally {
      await other.close().catch(() => {})
      await db.drop()
    }
  })

  it('tells every unit of a group the truth when the disk is full: a unit answered is a unit kept', async () => {
    // A database that can grow by a few pages only: some units fail with SQLITE_FULL. SQLite may
    // undo just the failing statement or the whole transaction; either way, each unit that
    // resolved must be on disk, and each that rejected must have left nothing.
    const pages = Number((await sql<{ page_count: number }>`PRAGMA page_count`.execute(store.db)).rows[0]!.page_count)
    await sql.raw(`PRAGMA max_page_count = ${pages + 8}`).execute(store.db)
    try {
      const big = 'x'.repeat(6000)
      const outcomes = await Promise.allSettled(Array.from({ length: 12 }, async (_, i) => await store.transaction(async uow => {
        return await createPost(uow, { title: `full ${i}`, content: big })
      })))
      const rejected = outcomes.filter(o => o.status === 'rejected')
      assert.ok(rejected.length > 0, 'the disk filled up')
      // The unit that hit the full disk gets SQLITE_FULL; others that lost their writes with it
      // get the group's rollback: each is a 503 to its client.
      for (const o of rejected) assert.ok(isStoreUnavailable((o as PromiseRejectedResult).reason), String((o as PromiseRejectedResult).reason))
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(store.db)
      const all = await titles()
      outcomes.forEach((o, i) => {
        assert.equal(all.includes(`full ${i}`), o.status === 'fulfilled', `unit ${i}: ${o.status}`)
      })
    } finally {
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(store.db)
    }
  })
})
