import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type LogEvent, sql } from 'kysely'
import { STORE_MODULES } from '../../src/context.ts'
import { isStoreUnavailable } from '../../src/store/errors.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import type { SyncLog } from '../../src/store/sqlite/wal-sync.ts'
import { freshDatabase } from '../helper.ts'
import { until } from '../support/poll.ts'
import { createPost } from '../support/posts.ts'

const admin = { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' as const }

/** A sync of the log that the test ends: each call waits until released or failed. */
function heldSync (): { syncLog: SyncLog, calls: { release: () => void, fail: (err: Error) => void }[] } {
  const calls: { release: () => void, fail: (err: Error) => void }[] = []
  const syncLog: SyncLog = async () => { await new Promise<void>((resolve, reject) => { calls.push({ release: resolve, fail: reject }) }) }
  return { syncLog, calls }
}

/** Whether `p` has settled once the loop has run a few turns (timers and I/O callbacks included). */
async function settledSoon (p: Promise<unknown>): Promise<boolean> {
  let settled = false
  p.then(() => { settled = true }, () => { settled = true })
  for (let i = 0; i < 5; i++) await new Promise(resolve => { setImmediate(resolve) })
  return settled
}

/**
 * SQLite at FULL: the connection commits at NORMAL and the store syncs the log after COMMIT on the
 * thread pool (src/store/sqlite/wal-sync.ts), so the loop serves other requests meanwhile. What
 * must hold is FULL's promise: no writer is answered, and no reader gets an answer, before the
 * commits it depends on are on disk.
 */
describe('the durable commit, off the event loop [sqlite]', () => {
  let store: KyselyStore
  let drop: () => Promise<void>
  const held = heldSync()
  const statements: string[] = []
  before(async () => {
    const db = await freshDatabase('sqlite')
    drop = db.drop
    // The migrations' own commits are synced by the real fdatasync; the tests hold the ones after.
    let hold = false
    const syncLog: SyncLog = async log => { await (hold ? held.syncLog(log) : log.datasync()) }
    store = openSqliteStore(db.url.slice('sqlite:'.length), { modules: STORE_MODULES, syncLog, log: (e: LogEvent) => { statements.push(e.query.sql) } })
    await store.migrate()
    await store.serverSecret()
    hold = true
  })
  after(async () => {
    for (const c of held.calls) c.release()
    await store.close()
    await drop()
  })

  async function titles (): Promise<string[]> {
    return (await store.posts.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 100 }, admin)).items.map(p => p.title)
  }

  it('answers the writers of a group once the sync after their COMMIT is done, and the loop runs meanwhile', async () => {
    const synced = store.dialect.durableCommit!.syncs
    const writes = Promise.all([1, 2, 3].map(async i => await store.transaction(async uow => await createPost(uow, { title: `held ${i}` }))))
    await until(() => held.calls.length === 1, 'the sync after the COMMIT')
    assert.ok(statements.includes('COMMIT'))
    // The COMMIT is done and its sync is running: the loop still turns (this very test runs), the writers wait.
    assert.equal(await settledSoon(writes), false, 'no writer is answered before the sync')
    held.calls.shift()!.release()
    assert.equal((await writes).length, 3)
    assert.equal(store.dialect.durableCommit!.syncs, synced + 1, 'one sync for the group')
  })

  it('holds the next group until the last one is on disk, gathering the writes that arrive meanwhile into one COMMIT; a reader runs meanwhile and waits for the sync', async () => {
    statements.length = 0
    const first = store.transaction(async uow => await createPost(uow, { title: 'first' }))
    await until(() => held.calls.length === 1, 'the first sync')
    // The connection is free while the first sync runs: a reader's SELECT runs, but is not
    // answered before the sync. Writes that arrive meanwhile, turn after turn, wait as one group:
    // a COMMIT now would wait for this sync anyway.
    const read = titles()
    const second = store.transaction(async uow => await createPost(uow, { title: 'second' }))
    await new Promise(resolve => { setImmediate(resolve) })
    const third = store.transaction(async uow => await createPost(uow, { title: 'third' }))
    await until(() => statements.some(s => /^select .* from "posts"/i.test(s)), 'the read')
    assert.equal(await settledSoon(read), false, 'the reader waits for the first sync')
    assert.equal(statements.filter(s => s === 'COMMIT').length, 1, 'no second COMMIT while the first sync runs')
    assert.equal(await settledSoon(second), false)
    held.calls.shift()!.release()
    await first
    // Then the second and the third commit together, and their sync is the next one.
    await until(() => held.calls.length === 1, 'the second sync')
    assert.equal(statements.filter(s => s === 'COMMIT').length, 2, 'the writes that waited share one COMMIT')
    assert.equal(await settledSoon(second), false, 'the second writer waits for its own sync')
    held.calls.shift()!.release()
    await Promise.all([second, third])
    assert.ok((await read).includes('first'))
    assert.deepEqual((await titles()).slice(-3), ['first', 'second', 'third'])
  })

  it('counts a write made outside any transaction as a commit to sync', async () => {
    await sql`CREATE TABLE IF NOT EXISTS dc_rows (id INTEGER PRIMARY KEY)`.execute(store.db)
    await until(() => held.calls.length <= 1, 'the schema change')
    for (const c of held.calls.splice(0)) c.release()
    const insert = sql`INSERT INTO dc_rows (id) VALUES (1)`.execute(store.db)
    await until(() => held.calls.length === 1, 'the sync of the autocommit write')
    assert.equal(await settledSoon(insert), false)
    held.calls.shift()!.release()
    await insert
    // A read changes nothing: it syncs nothing.
    const syncs = store.dialect.durableCommit!.syncs
    await sql`SELECT count(*) FROM dc_rows`.execute(store.db)
    assert.equal(store.dialect.durableCommit!.syncs, syncs)
    assert.equal(held.calls.length, 0)
  })

  it('fails the writers and readers of a failed sync with a store error (503), and syncs the next commit again', async () => {
    const write = store.transaction(async uow => await createPost(uow, { title: 'unsure' }))
    await until(() => held.calls.length === 1, 'the sync')
    const read = titles()
    await until(() => statements.at(-1) !== undefined && /^select/i.test(statements.at(-1)!), 'the read')
    held.calls.shift()!.fail(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
    for (const outcome of await Promise.allSettled([write, read])) {
      assert.equal(outcome.status, 'rejected')
      const reason = (outcome as PromiseRejectedResult).reason as Error & { code?: string }
      assert.equal(reason.code, 'SQLITE_IOERR_FSYNC')
      assert.ok(isStoreUnavailable(reason), 'answered 503, not 500')
    }
    const next = store.transaction(async uow => await createPost(uow, { title: 'after' }))
    await until(() => held.calls.length === 1, 'the next sync')
    held.calls.shift()!.release()
    await next
    assert.ok((await titles()).includes('after'))
  })
})

describe('SQLITE_SYNCHRONOUS on the connection [sqlite]', () => {
  for (const [level, pragma, syncs] of [['FULL', 1, true], ['NORMAL', 1, false]] as const) {
    it(`at ${level}: the connection commits at NORMAL, and the store ${syncs ? 'syncs the log after every COMMIT with fdatasync' : 'leaves the log to the checkpoints'}`, async () => {
      const db = await freshDatabase('sqlite')
      const store = openSqliteStore(db.url.slice('sqlite:'.length), { modules: STORE_MODULES, synchronous: level })
      try {
        await store.migrate()
        assert.equal(Number((await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(store.db)).rows[0]!.synchronous), pragma)
        const before = store.dialect.durableCommit?.syncs ?? 0
        await store.transaction(async uow => await createPost(uow, { title: 'synced' }))
        assert.equal(store.dialect.durableCommit === null, !syncs)
        if (syncs) assert.ok(store.dialect.durableCommit!.syncs > before)
      } finally {
        await store.close()
        await db.drop()
      }
    })
  }

  it('keeps SQLite\'s own sync in COMMIT where the file cannot use a write-ahead log (:memory:)', async () => {
    const store = openSqliteStore(':memory:', { modules: STORE_MODULES })
    try {
      assert.equal(store.dialect.durableCommit, null)
      assert.equal(Number((await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(store.db)).rows[0]!.synchronous), 2)
    } finally {
      await store.close()
    }
  })
})
