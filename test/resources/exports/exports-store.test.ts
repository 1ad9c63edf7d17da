import assert from 'node:assert/strict'
import { before, beforeEach, describe, it } from 'node:test'
import type { ExportRequest } from '../../../src/resources/exports/export.ts'
import type { Store } from '../../../src/store/store.ts'
import { storeKinds } from '../../helper.ts'
import { useFreshStore } from '../../support/store.ts'

const request: ExportRequest = { format: 'ndjson', filter: {}, callbackUrl: null }
const v1 = { apiVersion: 1, linkBase: '' }
const at = (ms: number) => new Date(Date.UTC(2030, 0, 1) + ms)
/** Past every lease a test takes: a clean-up as of then deletes every delivery, held or not. */
const FAR_FUTURE = new Date('9999-12-31T00:00:00Z')

for (const kind of await storeKinds()) {
  describe(`exports store [${kind}]`, () => {
    const f = useFreshStore(kind)
    let store: Store
    before(() => { store = f.store })

    // Each test starts with an empty queue, so claims see only its own jobs.
    beforeEach(async () => {
      await store.exports.deleteFinishedBefore(at(10 ** 12))
      for (;;) {
        const lease = await store.transaction(async uow => await uow.exports.claim(at(10 ** 12), 1, 1000))
        if (lease === null) break
        await store.exports.finish(lease, { status: 'failed', error: 'cleared' }, at(0))
      }
      await store.exports.deleteFinishedBefore(at(10 ** 12))
    })

    const claim = async (now: Date, leaseMs = 1000, max = 3) => await store.transaction(async uow => await uow.exports.claim(now, leaseMs, max))

    it('claims the oldest pending job once; a held lease is not claimed again until it expires', async () => {
      const a = await store.exports.create('root', request, v1, at(0))
      const b = await store.exports.create('root', request, v1, at(1))
      const first = await claim(at(10))
      assert.equal(first?.job.id, a.id)
      assert.equal(first?.job.status, 'running')
      assert.equal(first?.job.attempts, 1)
      assert.equal((await claim(at(20)))?.job.id, b.id)
      assert.equal(await claim(at(30)), null, 'both are held')
      const again = await claim(at(2000))
      assert.equal(again?.job.id, a.id, 'the first lease has expired: its job is taken up again')
      assert.equal(again?.job.attempts, 2)
      assert.notEqual(again?.token, first?.token)
    })

    it('a worker that lost its lease can write nothing more; the new run starts from an empty file', async () => {
      const job = await store.exports.create('root', request, v1, at(0))
      const old = (await claim(at(0)))!
      assert.equal(await store.exports.append(old, { seq: 0, start: 0, data: Buffer.from('stale\n') }, 1, at(500), at(1)), true)
      const fresh = (await claim(at(5000)))!
      assert.equal(fresh.job.id, job.id)
      assert.deepEqual(await store.exports.readChunks(job.id, 0, 100, 10), [], 'the dead run\'s bytes are gone')
      assert.equal(await store.exports.append(old, { seq: 1, start: 6, data: Buffer.from('late\n') }, 2, at(9000), at(5001)), false)
      assert.equal(await store.exports.finish(old, { status: 'succeeded', size: 6, sha256: 'x' }, at(5002)), null)
      assert.equal(await store.exports.release(old, true, at(5003)), false)
      assert.equal(await store.exports.begin(fresh, 2, at(9000), at(5004)), true)
      assert.equal(await store.exports.append(fresh, { seq: 0, start: 0, data: Buffer.from('abc\n') }, 1, at(9000), at(5005)), true)
      assert.equal(await store.exports.append(fresh, { seq: 1, start: 4, data: Buffer.from('defgh\n') }, 2, at(9000), at(5006)), true)
      const done = await store.exports.finish(fresh, { status: 'succeeded', size: 10, sha256: 'h' }, at(5007))
      assert.equal(done?.status, 'succeeded')
      assert.equal(done?.size, 10)
      assert.equal(done?.exported, 2)
      assert.equal(done?.total, 2)
      const read = async (from: number, to: number) => Buffer.concat((await store.exports.readChunks(job.id, from, to, 10)).map(c => Buffer.from(c.data))).toString()
      assert.equal(await read(0, 9), 'abc\ndefgh\n')
      assert.equal(await read(5, 9), 'defgh\n', 'only chunks that overlap are read')
      assert.equal(await read(0, 3), 'abc\n')
      assert.equal((await store.exports.readChunks(job.id, 3, 4, 10)).length, 2)
    })

    it('fails a job whose lease expired after its last allowed run, with a reason', async () => {
      const job = await store.exports.create('root', request, v1, at(0))
      await claim(at(0), 100, 2)
      await claim(at(200), 100, 2)
      assert.equal(await claim(at(400), 100, 2), null, 'no third run')
      assert.deepEqual(await store.transaction(async uow => await uow.exports.expire(at(50), 2)), [], 'not before its lease expired')
      const expired = await store.transaction(async uow => await uow.exports.expire(at(400), 2))
      assert.deepEqual(expired.map(j => [j.id, j.status]), [[job.id, 'failed']])
      assert.match(expired[0]!.error ?? '', /interrupted 2 times/)
      assert.equal((await store.exports.findById(job.id, 'root'))?.status, 'failed')
    })

    it('release gives a job back to the queue, counting the run or not', async () => {
      const job = await store.exports.create('root', request, v1, at(0))
      const lease = (await claim(at(0)))!
      assert.equal(await store.exports.release(lease, false, at(1)), true)
      const again = (await claim(at(2)))!
      assert.equal(again.job.id, job.id)
      assert.equal(again.job.attempts, 1, 'a shutdown does not count against the job')
      await store.exports.release(again, true, at(3), 'boom')
      const third = (await claim(at(4)))!
      assert.equal(third.job.attempts, 2)
      assert.equal(third.job.error, 'boom')
    })

    it('is found only by its owner', async () => {
      const job = await store.exports.create('alice', { format: 'ndjson', filter: { status: 'draft' }, callbackUrl: 'https://example.com/h' }, { apiVersion: 2, linkBase: '/v2' }, at(0))
      assert.deepEqual((await store.exports.findById(job.id, 'alice'))?.filter, { status: 'draft' })
      assert.equal((await store.exports.findById(job.id, 'alice'))?.callbackUrl, 'https://example.com/h')
      assert.equal(await store.exports.findById(job.id, 'bob'), null)
    })

    it('deletes finished jobs past their retention, with their files; unfinished ones stay', async () => {
      const old = await store.exports.create('root', request, v1, at(0))
      const lease = (await claim(at(0)))!
      await store.exports.append(lease, { seq: 0, start: 0, data: Buffer.from('x\n') }, 1, at(1000), at(1))
      await store.exports.finish(lease, { status: 'succeeded', size: 2, sha256: 'h' }, at(10))
      const waiting = await store.exports.create('root', request, v1, at(0))
      assert.equal(await store.exports.deleteFinishedBefore(at(5)), 0)
      assert.equal(await store.exports.deleteFinishedBefore(at(11)), 1)
      assert.equal(await store.exports.findById(old.id, 'root'), null)
      assert.deepEqual(await store.exports.readChunks(old.id, 0, 10, 10), [])
      assert.equal((await store.exports.findById(waiting.id, 'root'))?.status, 'pending')
    })

    // SQLite serves one instance: several stores in one process would block each other's event loop
    // on the file lock, so there the claimants share the store (and its one connection).
    it('with several claimants at once (PostgreSQL: several stores on one database), each job is claimed exactly once', async () => {
      const others = kind === 'postgres' ? [await f.open(), await f.open()] : [store, store]
      const ids = new Set<number>()
      for (let i = 0; i < 12; i++) ids.add((await store.exports.create('root', request, v1, at(i))).id)
      const claimed: number[] = []
      await Promise.all([store, ...others].map(async s => {
        for (;;) {
          const lease = await s.transaction(async uow => await uow.exports.claim(at(100), 60_000, 3))
          if (lease === null) return
          claimed.push(lease.job.id)
        }
      }))
      assert.deepEqual([...claimed].sort((a, b) => a - b), [...ids].sort((a, b) => a - b))
    })

    it('webhook outbox: a due delivery is held by one sender, retried when told, and done once delivered', async () => {
      await store.webhooks.enqueue({ id: `msg_${kind}_1`, exportId: null, url: 'https://example.com/h', payload: '{"a":1}' }, at(0))
      const [d] = await store.webhooks.claimDue(at(1), 1000, 5)
      assert.equal(d?.id, `msg_${kind}_1`)
      assert.equal(d?.attempts, 1)
      assert.equal(d?.payload, '{"a":1}')
      assert.deepEqual(await store.webhooks.claimDue(at(2), 1000, 5), [], 'held')
      await store.webhooks.failedAttempt(d!.id, 'the receiver answered 500', at(500), at(3))
      assert.deepEqual(await store.webhooks.claimDue(at(100), 1000, 5), [], 'not due yet')
      const [again] = await store.webhooks.claimDue(at(600), 1000, 5)
      assert.equal(again?.attempts, 2)
      await store.webhooks.delivered([again!.id], at(601))
      assert.deepEqual(await store.webhooks.claimDue(at(10 ** 9), 1000, 5), [])
      await store.webhooks.enqueue({ id: `msg_${kind}_2`, exportId: null, url: 'https://example.com/h', payload: '{}' }, at(0))
      const [given] = await store.webhooks.claimDue(at(1), 1000, 5)
      await store.webhooks.failedAttempt(given!.id, 'timeout', null, at(2))
      assert.deepEqual(await store.webhooks.claimDue(at(10 ** 9), 1000, 5), [], 'given up')
    })

    it('subscription deliveries: each claim takes a prefix of every subscription\'s queue in event order; retries and callbacks go free', async () => {
      const queue = async (webhookId: number, eventIds: number[]) => {
        for (const eventId of eventIds) {
          await store.webhooks.enqueue({ id: `q_${kind}_${webhookId}_${eventId}`, webhookId, eventId, eventType: 'post.created', url: 'https://example.com/h', payload: '{}' }, at(0))
        }
      }
      // Queued out of order: the claim follows the event ids, not the order of insertion.
      await queue(9001, [3, 1, 2, 30, 29, ...Array.from({ length: 24 }, (_, i) => i + 4), 28])
      await queue(9002, [5, 4, 3, 2, 1])
      await store.webhooks.enqueue({ id: `cb_${kind}`, exportId: null, url: 'https://example.com/cb', payload: '{}' }, at(0))
      const claim = async (limit: number) => await store.transaction(async uow => await uow.webhooks.claimDue(at(1), 60_000, limit))

      const first = await claim(10)
      assert.equal(first.length, 10)
      assert.ok(first.some(d => d.id === `cb_${kind}`), 'a callback is not held back by subscriptions')
      const events = (ds: typeof first, w: number) => ds.filter(d => d.webhookId === w).map(d => d.eventId)
      // The two subscriptions take turns: nine first attempts, four or five each, each the earliest.
      assert.deepEqual(events(first, 9002), [1, 2, 3, 4, 5].slice(0, events(first, 9002).length))
      assert.deepEqual(events(first, 9001), [1, 2, 3, 4, 5].slice(0, events(first, 9001).length))
      assert.equal(events(first, 9001).length + events(first, 9002).length, 9)
      assert.ok(events(first, 9002).length >= 4)
      assert.deepEqual(first.map(d => d.eventId ?? 0), first.map(d => d.eventId ?? 0).sort((a, b) => a - b), 'handed over in event order')

      // The rest come in order, claim after claim, each delivery once.
      const seen = new Map<number, number[]>([[9001, events(first, 9001) as number[]], [9002, events(first, 9002) as number[]]])
      for (;;) {
        const next = await claim(7)
        if (next.length === 0) break
        for (const w of [9001, 9002]) seen.get(w)!.push(...events(next, w) as number[])
      }
      assert.deepEqual(seen.get(9001), Array.from({ length: 30 }, (_, i) => i + 1))
      assert.deepEqual(seen.get(9002), [1, 2, 3, 4, 5])

      // A retry is due at its own time, whatever else waits, and a first attempt does not wait for it.
      await store.webhooks.failedAttempt(`q_${kind}_9001_2`, 'the receiver answered 500', at(500), at(2))
      await queue(9001, [31])
      assert.deepEqual((await claim(5)).map(d => d.eventId), [31])
      assert.deepEqual((await store.transaction(async uow => await uow.webhooks.claimDue(at(600), 60_000, 5))).map(d => d.id), [`q_${kind}_9001_2`])
      for (const w of [9001, 9002]) await store.webhooks.deleteByWebhook(w, FAR_FUTURE)
      await store.webhooks.failedAttempt(`cb_${kind}`, 'done with', null, at(3))
    })

    it('subscription deliveries with several claimants at once: each claimed exactly once', async () => {
      const others = kind === 'postgres' ? [await f.open(), await f.open()] : [store, store]
      // Queued at once, as a fan-out does: 120 rows, more than one statement's hundred.
      const queued = Array.from({ length: 40 }, (_, i) => [9101, 9102, 9103].map(webhookId => ({ id: `c_${kind}_${webhookId}_${i + 1}`, webhookId, eventId: i + 1, url: 'https://example.com/h', payload: null }))).flat()
      await store.webhooks.enqueueAll(queued, at(0))
      const ids = queued.map(d => d.id)
      const claimed: string[] = []
      await Promise.all([store, ...others].map(async s => {
        for (;;) {
          const due = await s.transaction(async uow => await uow.webhooks.claimDue(at(1), 60_000, 4))
          if (due.length === 0) return
          claimed.push(...due.map(d => d.id))
        }
      }))
      assert.deepEqual([...claimed].sort(), [...ids].sort())
      for (const w of [9101, 9102, 9103]) await store.webhooks.deleteByWebhook(w, FAR_FUTURE)
    })
  })
}
