import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pino from 'pino'
import type { Clock } from '../../../src/clock.ts'
import { eventJson } from '../../../src/facilities/events/events.ts'
import { FanOut } from '../../../src/facilities/events/fan-out.ts'
import { runnerOf, storeKinds } from '../../helper.ts'
import { useFreshStore } from '../../support/store.ts'
import { until } from '../../support/poll.ts'

const event = (n: number) => ({ type: 'post.created', data: { n }, owner: 'alice', public: false })

for (const kind of await storeKinds()) {
  describe(`webhook fan-out: retention [${kind}]`, () => {
    const f = useFreshStore(kind)

    /**
     * One fan-out run with EVENTS_RETENTION_H 0 on a clock a second ahead: every event fanned out,
     * and every delivery finished, even a moment ago, is past retention.
     */
    const pruneOnce = async () => {
      const before = await f.store.events.prunedThrough()
      const ahead: Clock = { now: () => new Date(Date.now() + 1000) }
      const fanOut = runnerOf(new FanOut({ store: f.store, log: pino({ level: 'silent' }), pollMs: 60_000, retentionH: 0, queued: () => {}, clock: ahead }))
      await fanOut.start()
      try {
        await until(async () => await f.store.events.prunedThrough() !== before, 'the fan-out to prune', 2000)
      } finally {
        await fanOut.stop()
      }
    }

    it('keeps every event from the oldest one a delivery refers to, and sends that delivery its event\'s body', async () => {
      await f.store.transaction(async uow => { uow.events.record(event(1), event(2), event(3)) })
      const [e1, e2, e3] = await f.store.events.list(await f.store.events.prunedThrough(), 3)
      await f.store.transaction(async uow => { await uow.events.fannedOut(e3!.id) })
      // The delivery holds no copy of the body: it refers to its event.
      await f.store.webhooks.enqueue({ id: `dlv_${kind}_held`, webhookId: 1, eventId: e2!.id, eventType: e2!.type, url: 'https://example.com/h', payload: null }, new Date())
      assert.equal((await f.store.webhooks.findById(`dlv_${kind}_held`))?.payload, null)

      await pruneOnce()
      assert.equal(await f.store.events.prunedThrough(), e1!.id, 'pruned up to the held event, not through it')
      assert.deepEqual((await f.store.events.list(0, 10)).map(e => e.id), [e2!.id, e3!.id])

      const [claimed] = await f.store.transaction(async uow => await uow.webhooks.claimDue(new Date(), 60_000, 5))
      assert.equal(claimed?.id, `dlv_${kind}_held`)
      assert.equal(claimed?.payload, eventJson(e2!))
      assert.deepEqual(JSON.parse(claimed!.payload!), { id: String(e2!.id), type: 'post.created', occurred_at: e2!.occurredAt, actor: { kind: 'system', id: null, name: 'system' }, data: { n: 2 } })

      // Once the delivery is finished and past retention, it goes, and its event with it.
      await f.store.webhooks.delivered([claimed!.id], new Date())
      await pruneOnce()
      assert.equal(await f.store.webhooks.findById(claimed!.id), null)
      assert.equal(await f.store.events.prunedThrough(), e3!.id)
      assert.deepEqual(await f.store.events.list(0, 10), [])
    })
  })
}
