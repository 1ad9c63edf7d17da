import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { ConfigError } from '../../src/config.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { loadConfig, openStore } from '../../src/context.ts'
import { freshDatabase } from '../helper.ts'

async function synchronousOf (env: Record<string, string>): Promise<number> {
  const db = await freshDatabase('sqlite')
  const store = await openStore(loadConfig({ DATABASE_URL: db.url, ...env })) as KyselyStore
  try {
    const { rows } = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(store.db)
    return rows[0]!.synchronous
  } finally {
    await store.close()
    await db.drop()
  }
}

describe('SQLITE_SYNCHRONOUS', () => {
  it('is FULL by default: every acknowledged commit is on disk', async () => {
    assert.equal(await synchronousOf({}), 2)
  })

  it('can be NORMAL', async () => {
    assert.equal(await synchronousOf({ SQLITE_SYNCHRONOUS: 'normal' }), 1)
  })

  it('refuses any other level at start-up', () => {
    assert.throws(() => loadConfig({ SQLITE_SYNCHRONOUS: 'OFF' }), (err: unknown) => err instanceof ConfigError && err.setting === 'SQLITE_SYNCHRONOUS')
  })
})
