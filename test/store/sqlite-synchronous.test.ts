import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { ConfigError } from '../../src/config.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { loadConfig, openStore } from '../../src/context.ts'
import { freshDatabase } from '../helper.ts'

/** Whether the store opened from `env` syncs the log after every COMMIT (FULL), off the event loop. */
async function syncsEveryCommit (env: Record<string, string>): Promise<boolean> {
  const db = await freshDatabase('sqlite')
  const store = await openStore(loadConfig({ DATABASE_URL: db.url, ...env })) as KyselyStore
  try {
    const { rows } = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(store.db)
    // The connection commits at NORMAL either way; at FULL the store syncs the log itself (src/store/sqlite/wal-sync.ts).
    assert.equal(rows[0]!.synchronous, 1)
    return store.dialect.durableCommit !== null
  } finally {
    await store.close()
    await db.drop()
  }
}

describe('SQLITE_SYNCHRONOUS', () => {
  it('is FULL by default: every acknowledged commit is on disk', async () => {
    assert.equal(await syncsEveryCommit({}), true)
  })

  it('can be NORMAL', async () => {
    assert.equal(await syncsEveryCommit({ SQLITE_SYNCHRONOUS: 'normal' }), false)
  })

  it('refuses any other level at start-up', () => {
    assert.throws(() => loadConfig({ SQLITE_SYNCHRONOUS: 'OFF' }), (err: unknown) => err instanceof ConfigError && err.setting === 'SQLITE_SYNCHRONOUS')
  })
})
