import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type LogEvent, sql } from 'kysely'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { freshDatabase } from '../helper.ts'

const input = (title: string, content = '') => ({ title, content, status: 'published' as const })
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
    store = openSqliteStore(db.url.slice('sqlite:'.length), { log: (e: LogEvent) => { statements.push(e.query.sql) } })
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
    const ids = await Promise.all(Array.from({ length: 10 }, async (_, i) => await store.transaction(async uow => {
      return (await uow.posts.create(input(`group ${i}`), 'alice', new Date())).id
    })))
    assert.equal(new Set(ids).size, 10)
    assert.equal(count('BEGIN IMMEDIATE'), 1)
    assert.equal(count('COMMIT'), 1)
    assert.equal(count('SAVEPOINT unit'), 10)
    assert.equal(count('RELEASE unit'), 10)
    const all = await titles()
    for (let i = 0; i < 10; i++) assert.ok(all.includes(`group ${i}`))
    // Units of a later turn go to a new group.
    statements.length = 0
    await store.transaction(async uow => await uow.posts.create(input('next turn'), 'alice', new Date()))
    assert.equal(count('COMMIT'), 1)
  })

  it('rolls back a failing or abandoned unit alone; the others of its group commit', async () => {
    const abandon = new AbortController()
    const outcomes = await Promise.allSettled([
      store.transaction(async uow => await uow.posts.create(input('kept a'), 'alice', new Date())),
      store.transaction(async uow => {
        await uow.posts.create(input('failed'), 'alice', new Date())
        throw new Error('the second step failed')
      }),
      store.transaction(async uow => {
        const p = await uow.posts.create(input('abandoned'), 'alice', new Date())
        abandon.abort(new Error('the client went away'))
        return p
      }, { signal: abandon.signal }),
      store.transaction(async uow => await uow.posts.create(input('kept b'), 'alice', new Date())),
    ])
    assert.deepEqual(outcomes.map(o => o.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /the second step failed/)
    const all = await titles()
    assert.ok(all.includes('kept a') && all.includes('kept b'))
    assert.ok(!all.includes('failed') && !all.includes('abandoned'))
  })

  it('answers a unit only after the COMMIT, and makes readers outside the group wait for it', async () => {
    statements.length = 0
    const events: string[] = []
    const write = store.transaction(async uow => await uow.posts.create(input('durable'), 'alice', new Date()))
      .then(() => { events.push(`write answered after ${statements.length} statements`) })
    const read = titles().then(t => { events.push(`read ${t.includes('durable') ? 'saw' : 'missed'} it`) })
    await Promise.all([write, read])
    const commitAt = statements.indexOf('COMMIT')
    assert.ok(commitAt > 0)
    assert.equal(events[0], `write answered after ${commitAt + 1} statements`, 'nothing ran between the COMMIT and the answer')
    const readAt = statements.findIndex(s => /^select/i.test(s) && statements.indexOf(s) > commitAt)
    assert.ok(readAt > commitAt, `the reader ran after the COMMIT: ${statements.join(' | ')}`)
    assert.equal(events[1], 'read saw it')
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
        return await uow.posts.create(input(`full ${i}`, big), 'alice', new Date())
      })))
      const rejected = outcomes.filter(o => o.status === 'rejected')
      assert.ok(rejected.length > 0, 'the disk filled up')
      for (const o of rejected) assert.match(String((o as PromiseRejectedResult).reason), /full/i)
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
