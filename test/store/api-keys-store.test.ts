import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Store } from '../../src/store/store.ts'
import { storeKinds } from '../helper.ts'
import { createPost } from '../support/posts.ts'
import { type FreshStore, freshStore } from '../support/store.ts'
import { before } from '../support/hooks.ts'

for (const kind of await storeKinds()) {
  describe(`api key store [${kind}]`, () => {
    let f: FreshStore
    let store: Store
    before(async () => {
      f = await freshStore(kind)
      store = f.store
    })

    it('creates, finds and lists keys, never changing what was stored', async () => {
      const now = new Date('2024-02-03T04:05:06.789Z')
      const rec = await store.apiKeys.create({ id: '00000000000000a1', name: 'ci', scopes: ['posts:write', 'orders:write'], hash: 'ab'.repeat(32) }, now)
      assert.deepEqual(rec, { id: '00000000000000a1', name: 'ci', scopes: ['posts:write', 'orders:write'], hash: 'ab'.repeat(32), createdAt: now.toISOString(), revokedAt: null, userId: null })
      assert.deepEqual(await store.apiKeys.findById('00000000000000a1'), rec)
      assert.equal(await store.apiKeys.findById('ffffffffffffffff'), null)
      await store.apiKeys.create({ id: '00000000000000a2', name: 'deploy', scopes: ['admin'], hash: 'cd'.repeat(32) }, new Date(now.getTime() + 1))
      assert.deepEqual((await store.apiKeys.list()).map(k => k.name), ['ci', 'deploy'], 'in order of creation')
      assert.equal(await store.apiKeys.countActive(), 2)
    })

    it('refuses a second live key of one name, and allows it once the first is revoked', async () => {
      await store.apiKeys.create({ id: '00000000000000b1', name: 'bot', scopes: ['admin'], hash: '11'.repeat(32) }, new Date())
      await assert.rejects(store.apiKeys.create({ id: '00000000000000b2', name: 'bot', scopes: ['admin'], hash: '22'.repeat(32) }, new Date()))
      const before = await store.apiKeys.countActive()
      const when = new Date('2025-01-01T00:00:00.000Z')
      assert.equal(await store.apiKeys.revoke('bot', when), true)
      assert.equal((await store.apiKeys.findById('00000000000000b1'))?.revokedAt, when.toISOString())
      assert.equal(await store.apiKeys.countActive(), before - 1)
      assert.equal(await store.apiKeys.revoke('bot', when), false, 'nothing live is left to revoke')
      await store.apiKeys.create({ id: '00000000000000b2', name: 'bot', scopes: ['admin'], hash: '22'.repeat(32) }, new Date())
      assert.equal(await store.apiKeys.revoke('00000000000000b2', when), true, 'by id as well')
      assert.equal(await store.apiKeys.revoke('nobody', when), false)
    })
  })

  describe(`store lifecycle [${kind}]`, () => {
    it('shares one server secret between stores on one database', async () => {
      const f = await freshStore(kind)
      const other = await f.open()
      const [a, b] = await Promise.all([f.store.serverSecret(), other.serverSecret()])
      assert.equal(a.length, 32)
      assert.deepEqual(a, b)
      const third = await f.open()
      assert.deepEqual(await third.serverSecret(), a, 'a store opened later reads the same secret')
    })

    it('migrates twice without error or change', async () => {
      const f = await freshStore(kind)
      const tables = async () => {
        const { rows } = await (await import('kysely')).sql<{ n: string }>`select name as n from kysely_migration order by name`.execute((f.store as unknown as { db: import('kysely').Kysely<unknown> }).db)
        return rows.map(r => r.n)
      }
      const first = await tables()
      assert.ok(first.length >= 1)
      await f.store.migrate()
      assert.deepEqual(await tables(), first)
      const p = await createPost(f.store, { title: 't', content: 'c' }, { author: 'a' })
      await (await f.open()).migrate()
      assert.deepEqual(await f.store.posts.findById(p.id, null), p, 'data survives')
    })

    it('lets several stores migrate one fresh database at once', async () => {
      const f = await freshStore(kind, { migrate: false })
      const stores = [f.store, await f.open(), await f.open(), await f.open()]
      await Promise.all(stores.map(async s => { await s.migrate() }))
      const p = await createPost(stores[1]!, { title: 't', content: 'c' }, { author: 'a' })
      assert.equal((await stores[3]!.posts.findById(p.id, null))?.id, p.id)
    })

    it('stops answering once closed', async () => {
      const f = await freshStore(kind)
      const other = await f.open()
      await other.ping()
      await other.close()
      await assert.rejects(other.ping())
    })
  })
}
