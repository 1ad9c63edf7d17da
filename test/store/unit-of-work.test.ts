import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { UnitOfWorkEnded } from '../../src/store/kysely-store.ts'
import type { UnitOfWork } from '../../src/store/store.ts'
import { storeKinds } from '../helper.ts'
import { createPost, writeOver } from '../support/posts.ts'
import { type FreshStore, freshStore } from '../support/store.ts'
import { before } from '../support/hooks.ts'

const admin = { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' as const }

for (const kind of await storeKinds()) {
  describe(`store.transaction [${kind}]`, () => {
    let f: FreshStore
    before(async () => { f = await freshStore(kind) })

    async function titles (): Promise<string[]> {
      return (await f.store.posts.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 100 }, admin)).items.map(p => p.title)
    }

    it('commits every write of the unit together, and runs onCommit after the commit', async () => {
      const seen: string[][] = []
      const ids = await f.store.transaction(async uow => {
        const a = await createPost(uow, { title: 'uow a' })
        const b = await createPost(uow, { title: 'uow b' })
        uow.onCommit(async () => { seen.push(await titles()) })
        return [a.id, b.id]
      })
      assert.equal(ids.length, 2)
      assert.deepEqual(seen, [['uow a', 'uow b']], 'onCommit saw both writes committed')
    })

    it('leaves nothing behind when the work fails after its first write, and skips onCommit', async () => {
      let ran = false
      await assert.rejects(f.store.transaction(async uow => {
        await createPost(uow, { title: 'uow failed' })
        uow.onCommit(() => { ran = true })
        throw new Error('the second step failed')
      }), /the second step failed/)
      assert.equal(ran, false)
      assert.ok(!(await titles()).includes('uow failed'))
    })

    it('sees its own writes before the commit, which other readers do not', async () => {
      await f.store.transaction(async uow => {
        const p = await createPost(uow, { title: 'uow private' })
        assert.equal((await uow.posts.findById(p.id, null))?.title, 'uow private')
        const changed = await uow.posts.replace(p.id, writeOver(p, { title: 'uow changed' }), p.revision, new Date())
        assert.equal(changed.outcome, 'done')
        if (kind === 'postgres') assert.equal(await f.store.posts.findById(p.id, null), null, 'not visible outside before commit')
      })
      assert.ok((await titles()).includes('uow changed'))
    })

    it('says when the work is past its last abandon check (onCommitting), and only then', async () => {
      const calls: string[] = []
      await f.store.transaction(async uow => {
        await createPost(uow, { title: 'committing' })
        calls.push('work done')
      }, { onCommitting: () => { calls.push('committing') } })
      await assert.rejects(f.store.transaction(async () => { throw new Error('failed') }, { onCommitting: () => { calls.push('failed unit committing') } }))
      const gone = new AbortController()
      await assert.rejects(f.store.transaction(async () => { gone.abort(new Error('gone')) }, { signal: gone.signal, onCommitting: () => { calls.push('abandoned unit committing') } }))
      assert.deepEqual(calls, ['work done', 'committing'])
    })

    it('keeps the commit when an onCommit callback fails, and reports the failure', async () => {
      const reported: unknown[] = []
      await f.store.transaction(async uow => {
        await createPost(uow, { title: 'uow kept' })
        uow.onCommit(() => { throw new Error('webhook down') })
      }, { onCallbackError: err => reported.push(err) })
      assert.ok((await titles()).includes('uow kept'))
      assert.equal(reported.length, 1)
    })

    it('serialises concurrent units of work so each sees a consistent revision', async () => {
      const p = await createPost(f.store, { title: 'uow counter' })
      const outcomes = await Promise.all(Array.from({ length: 10 }, async (_, i) => await f.store.transaction(async uow => {
        const current = await uow.posts.findById(p.id, null)
        return (await uow.posts.replace(p.id, writeOver(current!, { title: `uow counter ${i}` }), current!.revision, new Date())).outcome
      })))
      // On SQLite units run one at a time, so all succeed; on PostgreSQL compare-and-set lets stale ones fail.
      assert.ok(outcomes.includes('done'))
      const final = await f.store.posts.findById(p.id, null)
      assert.equal(final!.revision, 1 + outcomes.filter(o => o === 'done').length)
    })

    it('refuses every statement through a unit that has committed: a query built, a prepared one, a write; nothing is written', async () => {
      let kept: UnitOfWork | undefined
      await f.store.transaction(async uow => { kept = uow })
      const before = await titles()
      await assert.rejects(kept!.posts.findById(1, admin), UnitOfWorkEnded)
      await assert.rejects(createPost(kept!, { title: 'too late' }), UnitOfWorkEnded)
      await assert.rejects(kept!.apiKeys.create({ id: '00000000000000e1', name: 'late', scopes: ['admin'], hash: 'ef'.repeat(32) }, new Date()), UnitOfWorkEnded)
      assert.deepEqual(await titles(), before)
      assert.equal(await f.store.apiKeys.findById('00000000000000e1'), null)
    })

    it('refuses a statement that work the unit did not await starts after it rolled back, while the next unit holds the connection', async () => {
      let late: Promise<unknown> | undefined
      await assert.rejects(f.store.transaction(async uow => {
        late = (async () => {
          await new Promise(resolve => setTimeout(resolve, 20))
          return await createPost(uow, { title: 'from a rolled-back unit' })
        })()
        late.catch(() => {})
        throw new Error('rolled back')
      }), /rolled back/)
      await f.store.transaction(async uow => {
        await new Promise(resolve => setTimeout(resolve, 60))
        await createPost(uow, { title: 'the next unit' })
      })
      await assert.rejects(late!, UnitOfWorkEnded)
      assert.ok(!(await titles()).includes('from a rolled-back unit'))
    })
  })
}
