import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { postgresAvailable, skipOutsideCI, storeKinds } from '../../helper.ts'
import { type FreshStore, freshStore } from '../../support/store.ts'
import { before } from '../../support/hooks.ts'

const event = (n: number) => ({ type: 'post.created', data: { n }, owner: 'alice', public: false })

for (const kind of await storeKinds()) {
  describe(`store.events [${kind}]`, () => {
    let f: FreshStore
    before(async () => { f = await freshStore(kind) })

    it('writes the events of a unit of work with it, and none of a unit that rolled back', async () => {
      const before = await f.store.events.lastId()
      await f.store.transaction(async uow => { uow.events.record(event(1), event(2)) })
      await assert.rejects(f.store.transaction(async uow => {
        uow.events.record(event(3))
        throw new Error('rolled back')
      }), /rolled back/)
      const events = await f.store.events.list(before, 10)
      assert.deepEqual(events.map(e => JSON.parse(e.data)), [{ n: 1 }, { n: 2 }])
      assert.ok(events[0]!.id > before && events[1]!.id > events[0]!.id)
      assert.equal(await f.store.events.lastId(), events[1]!.id)
      assert.equal(events[0]!.owner, 'alice')
      assert.equal(events[0]!.public, false)
    })

    it('tells how far the events after a position go when none is addressed to a subscription', async () => {
      const start = await f.store.events.lastId()
      assert.equal(await f.store.events.untargetedThrough(start, 100), start, 'nothing new: the position itself')
      await f.store.transaction(async uow => { uow.events.record(event(4), event(5)) })
      const last = await f.store.events.lastId()
      assert.ok(last > start)
      assert.equal(await f.store.events.untargetedThrough(start, 100), last)
      const [first] = await f.store.events.list(start, 1)
      assert.equal(await f.store.events.untargetedThrough(start, 1), first!.id, 'no further than the window')
      await f.store.transaction(async uow => { uow.events.record({ type: 'ping', data: {}, owner: null, public: false, webhookId: 1 }) })
      assert.equal(await f.store.events.untargetedThrough(start, 100), null, 'a ping is read and fanned out')
      assert.equal(await f.store.events.untargetedThrough(start, 2), last, 'the ping is past the window')
      assert.equal(await f.store.events.untargetedThrough(await f.store.events.lastId(), 100), await f.store.events.lastId())
    })

    it('refuses to record an event outside a unit of work', () => {
      assert.throws(() => { f.store.events.record(event(9)) }, /unit of work/)
    })

    it('prunes old events up to a bound and remembers how far', async () => {
      const last = await f.store.events.lastId()
      const n = await f.store.transaction(async uow => await uow.events.prune(new Date(Date.now() + 1000), last - 1))
      assert.ok(n >= 1)
      assert.equal(await f.store.events.prunedThrough(), last - 1)
      assert.equal((await f.store.events.list(0, 10)).length, 1, 'the newest is past the bound and kept')
    })
  })
}

describe('store.events on PostgreSQL: ids follow commit order', { skip: skipOutsideCI(!(await postgresAvailable()) && 'PostgreSQL is unreachable') }, () => {
  let f: FreshStore
  before(async () => { f = await freshStore('postgres') })

  it('a reader polling during 8 parallel writers for 10 s sees every committed event exactly once, in id order', { timeout: 120_000 }, async () => {
    const RUN_MS = Number(process.env.EVENTS_RACE_MS ?? 10_000)
    // Writers on a store of their own (its own pool), as another instance would be.
    const writerStore = await f.open()
    const committed = new Set<string>()
    const rolledBack = new Set<string>()
    const running = { on: true }
    const writer = async (w: number) => {
      for (let i = 0; running.on; i++) {
        const tag = `${w}-${i}`
        const fail = i % 7 === 3
        try {
          await writerStore.transaction(async uow => {
            // Work of varying length before the events, so that units overlap and finish out of order
            // (real time on purpose).
            await sleep(i % 3)
            uow.events.record({ type: 'post.updated', data: { tag, part: 1 }, owner: null, public: true }, { type: 'post.published', data: { tag, part: 2 }, owner: null, public: true })
            if (fail) throw new Error('roll back')
          })
          committed.add(tag)
        } catch {
          rolledBack.add(tag)
        }
      }
    }
    const seen: { id: number, tag: string }[] = []
    let cursor = 0
    const read = async () => {
      for (const e of await f.store.events.list(cursor, 500)) {
        seen.push({ id: e.id, tag: (JSON.parse(e.data) as { tag: string }).tag })
        cursor = e.id
      }
    }
    const reader = (async () => { while (running.on) await read() })()
    const writers = Array.from({ length: 8 }, async (_, w) => { await writer(w) })
    // Real time on purpose: how long the writers and the reader race.
    await sleep(RUN_MS)
    running.on = false
    await Promise.all([...writers, reader])
    await read()

    assert.ok(committed.size > 100, `enough commits to race (${committed.size})`)
    assert.ok(rolledBack.size > 0)
    const ids = seen.map(s => s.id)
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'in id order')
    assert.equal(new Set(ids).size, ids.length, 'each once')
    const all = (await f.store.events.list(0, 1_000_000)).map(e => e.id)
    assert.deepEqual(ids, all, 'the reader saw every event the log holds')
    const tags = seen.map(s => s.tag)
    assert.deepEqual(new Set(tags), committed, 'every committed unit, and no rolled-back one')
    assert.equal(tags.length, committed.size * 2)
  })
})
