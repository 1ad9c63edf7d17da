import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { type Received, receiver } from '../../support/receiver.ts'
import { until } from '../../support/poll.ts'
import { before } from '../../support/hooks.ts'

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
const ENV = {
  WEBHOOK_SECRET: SECRET,
  WEBHOOK_ALLOW_LOOPBACK: '1',
  EVENTS_POLL_MS: '20',
  EXPORT_POLL_MS: '20',
  WEBHOOK_RETRY_BASE_MS: '10',
  WEBHOOK_MAX_ATTEMPTS: '2',
  WEBHOOK_TIMEOUT_MS: '1500',
}
type Headers = Record<string, string>
const ORDER = { customer_email: 'a@example.com', items: [{ sku: 'book', quantity: 1 }] }

/** Checks a delivery's signature with the standardwebhooks package's own verifier; returns the event. */
function verified (r: Received, secret: string): any {
  const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map(h => [h, String(r.headers[h])]))
  return new Webhook(secret).verify(r.body, headers)
}

for (const kind of await storeKinds()) {
  describe(`webhook subscriptions [${kind}]`, () => {
    let t: TestApp
    let admin: Headers
    let rx: Awaited<ReturnType<typeof receiver>>
    before(async () => {
      t = await buildTestApp(kind, ENV)
      admin = await t.auth('root', ['admin'])
      rx = await receiver()
    })
    after(async () => {
      await rx.close()
    })

    const subscribe = async (url: string, events: string[] = ['*'], extra: object = {}) =>
      await t.request({ method: 'POST', url: '/webhooks', headers: admin, payload: { url, events, ...extra } })
    const at = (path: string) => rx.got.filter(r => r.path === path)
    const order = async (who = 'carol') => json(await t.request({ method: 'POST', url: '/orders', headers: await t.auth(who, ['orders:write']), payload: ORDER }))

    it('creates a subscription and shows its secret once', async () => {
      const res = await subscribe(`${rx.base}/ok`, ['order.created'], { description: 'shop' })
      assert.equal(res.statusCode, 201, res.body)
      const sub = json(res)
      assert.match(sub.secret, /^whsec_/)
      assert.equal(res.headers.location, `/webhooks/${sub.id}`)
      assert.deepEqual([sub.events, sub.enabled, sub.disabled_reason, sub.description], [['order.created'], true, null, 'shop'])
      const read = json(await t.request({ method: 'GET', url: `/webhooks/${sub.id}`, headers: admin }))
      assert.equal(read.secret, undefined)
      assert.equal(read.url, `${rx.base}/ok`)
      const list = json(await t.request({ method: 'GET', url: '/webhooks', headers: admin }))
      assert.ok(list.some((s: any) => s.id === sub.id && s.secret === undefined))
    })

    it('needs admin', async () => {
      const res = await t.request({ method: 'GET', url: '/webhooks', headers: await t.auth('alice', ['posts:write', 'orders:write']) })
      assert.equal(res.statusCode, 403)
      assert.equal((await t.request({ method: 'GET', url: '/webhooks' })).statusCode, 401)
    })

    it('refuses unknown, repeated or no events, "*" with others, and URLs that break the rules, with errors[]', async () => {
      for (const [events, url] of [
        [['post.nope'], `${rx.base}/ok`],
        [['post.created', 'post.created'], `${rx.base}/ok`],
        [[], `${rx.base}/ok`],
        [['*', 'post.created'], `${rx.base}/ok`],
        [['*'], 'ftp://example.com/x'],
        [['*'], 'http://10.0.0.1/hook'],
        [['*'], 'http://169.254.169.254/latest'],
        [['*'], 'http://user:pw@example.com/'],
      ] as const) {
        const res = await subscribe(url, [...events])
        assert.equal(res.statusCode, 422, `${JSON.stringify(events)} ${url}: ${res.body}`)
        const body = json(res)
        assert.equal(body.code, 'VALIDATION_FAILED')
        assert.ok(body.errors.length >= 1 && ['events', 'url'].some(f => body.errors[0].field.startsWith(f)), res.body)
      }
    })

    it('takes a URL of 2 000 characters and refuses one of 2 001', async () => {
      const base = `${rx.base}/ok?pad=`
      const ok = base + 'x'.repeat(2000 - base.length)
      assert.equal(ok.length, 2000)
      assert.equal((await subscribe(ok, ['order.cancelled'])).statusCode, 201)
      const res = await subscribe(ok + 'x', ['order.cancelled'])
      assert.equal(res.statusCode, 422)
      assert.equal(json(res).errors[0].field, 'url')
    })

    it('delivers matching events signed per Standard Webhooks, webhook-id the event id, in event order', async () => {
      const sub = json(await subscribe(`${rx.base}/ok`, ['order.created', 'order.cancelled']))
      const carol = await t.auth('carol', ['orders:write'])
      const o = json(await t.request({ method: 'POST', url: '/orders', headers: carol, payload: ORDER }))
      assert.equal((await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: carol })).statusCode, 200)
      const signedForSub = () => at('/ok').filter(r => { try { verified(r, sub.secret); return true } catch { return false } })
      await until(() => signedForSub().length >= 2, 'the deliveries')
      const mine = signedForSub()
      const events = mine.map(r => verified(r, sub.secret))
      assert.deepEqual(events.map((e: any) => e.type), ['order.created', 'order.cancelled'])
      for (const [i, e] of events.entries()) {
        assert.equal(mine[i]!.headers['webhook-id'], e.id)
        assert.match(e.id, /^\d+$/)
        assert.match(String(mine[i]!.headers['user-agent']), /^blog-post-service\/\d/)
        assert.equal(mine[i]!.headers['content-type'], 'application/json')
        assert.equal(e.data.id, o.id)
        assert.ok(!Number.isNaN(Date.parse(e.occurred_at)))
      }
      assert.ok(Number(events[0].id) < Number(events[1].id))
      assert.equal(events[1].data.status, 'CANCELLED')
      assert.throws(() => verified(mine[0]!, SECRET), 'another secret does not verify')
    })

    it('rotates the secret: for 24 h each delivery carries both signatures', async () => {
      const sub = json(await subscribe(`${rx.base}/ok`, ['order.created']))
      const rotated = await t.request({ method: 'POST', url: `/webhooks/${sub.id}/rotate-secret`, headers: admin })
      assert.equal(rotated.statusCode, 200, rotated.body)
      const fresh = json(rotated).secret
      assert.notEqual(fresh, sub.secret)
      const o = await order()
      await until(() => at('/ok').some(r => r.body.includes(`"id":${o.id},`) && String(r.headers['webhook-signature']).includes(' ')), 'a doubly signed delivery')
      const r = at('/ok').find(r => r.body.includes(`"id":${o.id},`) && String(r.headers['webhook-signature']).includes(' '))!
      assert.equal(String(r.headers['webhook-signature']).split(' ').length, 2)
      assert.equal(verified(r, fresh).type, 'order.created')
      assert.equal(verified(r, sub.secret).type, 'order.created')
    })

    it('pings one subscription alone; lists its deliveries newest first; redelivers with the same webhook-id', async () => {
      const sub = json(await subscribe(`${rx.base}/ok`, ['export.failed']))
      const ping = await t.request({ method: 'POST', url: `/webhooks/${sub.id}/ping`, headers: admin })
      assert.equal(ping.statusCode, 202, ping.body)
      await until(() => at('/ok').some(r => r.body.includes('"type":"ping"') && r.body.includes(`"webhook_id":${sub.id}`)), 'the ping')
      const got = at('/ok').filter(r => r.body.includes('"type":"ping"'))
      assert.equal(got.filter(r => r.body.includes(`"webhook_id":${sub.id}`)).length, 1)
      const event = verified(got.find(r => r.body.includes(`"webhook_id":${sub.id}`))!, sub.secret)
      assert.deepEqual(event.data, { webhook_id: sub.id })

      await until(async () => json(await t.request({ method: 'GET', url: `/webhooks/${sub.id}/deliveries`, headers: admin }))[0]?.status === 'succeeded', 'the log')
      const [d] = json(await t.request({ method: 'GET', url: `/webhooks/${sub.id}/deliveries`, headers: admin }))
      assert.deepEqual([d.event_id, d.event_type, d.status, d.attempts, d.last_status_code, d.next_attempt_at], [event.id, 'ping', 'succeeded', 1, 204, null])
      const again = await t.request({ method: 'POST', url: `/webhooks/${sub.id}/deliveries/${d.id}/redeliver`, headers: admin })
      assert.equal(again.statusCode, 202, again.body)
      assert.notEqual(json(again).id, d.id)
      await until(() => rx.got.filter(r => r.headers['webhook-id'] === event.id).length === 2, 'the redelivery')
      const log = json(await t.request({ method: 'GET', url: `/webhooks/${sub.id}/deliveries`, headers: admin }))
      assert.equal(log.length, 2)
      assert.equal(log[0].id, json(again).id, 'newest first')
      // Delivery ids are UUIDv7: time-ordered, so the newer sorts after the older (and the outbox's key index grows at its end).
      for (const id of [d.id, json(again).id]) assert.match(id, /^dlv_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.ok(json(again).id > d.id)
      assert.equal((await t.request({ method: 'POST', url: `/webhooks/${sub.id}/deliveries/dlv_nope/redeliver`, headers: admin })).statusCode, 404)
    })

    it('retries a failing receiver up to WEBHOOK_MAX_ATTEMPTS, then fails the delivery; a redirect is a failure, not followed', async () => {
      const failing = json(await subscribe(`${rx.base}/fail`, ['order.created']))
      const redirecting = json(await subscribe(`${rx.base}/redirect`, ['order.created']))
      const before = at('/ok').length
      await order()
      for (const s of [failing, redirecting]) {
        await until(async () => json(await t.request({ method: 'GET', url: `/webhooks/${s.id}/deliveries`, headers: admin }))[0]?.status === 'failed', 'the failure')
        const [d] = json(await t.request({ method: 'GET', url: `/webhooks/${s.id}/deliveries`, headers: admin }))
        assert.equal(d.attempts, 2)
        assert.equal(d.last_status_code, s === failing ? 500 : 302)
        assert.match(d.last_error, s === failing ? /500/ : /redirects are not followed/)
      }
      assert.equal(at('/redirect').length, 2)
      await until(async () => (await t.store.webhooks.backlog()).pending === 0, 'no delivery pending', 10_000)
      assert.equal(at('/ok').filter(r => r.body.includes('"order.created"')).length - before <= 2, true, 'the redirect target got nothing from it')
    })

    it('bounds a receiver that sends 10 MB (not read) or hangs (WEBHOOK_TIMEOUT_MS)', async () => {
      const big = json(await subscribe(`${rx.base}/big`, ['order.created']))
      const hang = json(await subscribe(`${rx.base}/hang`, ['order.created']))
      await order()
      await until(async () => json(await t.request({ method: 'GET', url: `/webhooks/${big.id}/deliveries`, headers: admin }))[0]?.status === 'succeeded', 'the big answer')
      await until(() => rx.bigClosedEarly() >= 1, 'the sender to hang up on the 10 MB body')
      await until(async () => json(await t.request({ method: 'GET', url: `/webhooks/${hang.id}/deliveries`, headers: admin }))[0]?.status === 'failed', 'the hanging receiver to time out')
      const [d] = json(await t.request({ method: 'GET', url: `/webhooks/${hang.id}/deliveries`, headers: admin }))
      assert.match(d.last_error, /no answer within 1500 ms/)
      for (const id of [big.id, hang.id]) await t.request({ method: 'DELETE', url: `/webhooks/${id}`, headers: admin })
    })

    it('disables a subscription after 20 failed deliveries in a row, until PATCHed back', async () => {
      const sub = json(await subscribe(`${rx.base}/fail`, ['order.cancelled']))
      const carol = await t.auth('carol', ['orders:write'])
      for (let i = 0; i < 20; i++) {
        const o = await order()
        await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: carol })
      }
      await until(async () => json(await t.request({ method: 'GET', url: `/webhooks/${sub.id}`, headers: admin })).enabled === false, 'the subscription to be disabled')
      const read = json(await t.request({ method: 'GET', url: `/webhooks/${sub.id}`, headers: admin }))
      assert.match(read.disabled_reason, /20 deliveries in a row failed/)
      const res = await t.request({ method: 'PATCH', url: `/webhooks/${sub.id}`, headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { enabled: true, url: `${rx.base}/ok` } })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual([json(res).enabled, json(res).disabled_reason, json(res).url], [true, null, `${rx.base}/ok`])
    })

    it('patches by merge patch only, checking the new values like a create', async () => {
      const sub = json(await subscribe(`${rx.base}/ok`, ['order.created']))
      const patch = (payload: object, type = 'application/merge-patch+json') => t.request({ method: 'PATCH', url: `/webhooks/${sub.id}`, headers: { ...admin, 'content-type': type }, payload })
      assert.equal((await patch({ events: ['bogus'] })).statusCode, 422)
      assert.equal((await patch({ url: 'http://192.168.1.1/' })).statusCode, 422)
      assert.equal((await patch({ description: 'x' }, 'application/json')).statusCode, 415)
      const done = await patch({ events: ['*'], description: null })
      assert.equal(done.statusCode, 200)
      assert.deepEqual([json(done).events, json(done).description], [['*'], null])
    })

    it('drops the pending deliveries of a deleted subscription: none is sent after the 204', async () => {
      const sub = json(await subscribe(`${rx.base}/hang`, ['order.created']))
      await order()
      await until(() => at('/hang').some(r => { try { verified(r, sub.secret); return true } catch { return false } }), 'the first attempt')
      const del = await t.request({ method: 'DELETE', url: `/webhooks/${sub.id}`, headers: admin })
      assert.equal(del.statusCode, 204)
      const sent = rx.got.length
      const mine = () => rx.got.slice(sent).filter(r => { try { verified(r, sub.secret); return true } catch { return false } })
      // A retry is sent from a pending delivery: once none is pending, none is still to come.
      await until(async () => (await t.store.webhooks.backlog()).pending === 0, 'no delivery pending', 10_000)
      assert.equal(mine().length, 0)
      assert.equal((await t.request({ method: 'GET', url: `/webhooks/${sub.id}/deliveries`, headers: admin })).statusCode, 404)
      assert.equal((await t.request({ method: 'GET', url: `/webhooks/${sub.id}`, headers: admin })).statusCode, 404)
    })

    it('answers the deletion of a subscription once its attempts in flight have ended: none starts after the 204', async () => {
      // An app of its own: a claim shares its 100 rows among the subscriptions with a queue, and
      // the other tests' subscriptions would split this one's batch below 16.
      const own = await buildTestApp(kind, ENV)
      const gated = await receiver()
      try {
        const root = await own.auth('root', ['admin'])
        const sub = json(await own.request({ method: 'POST', url: '/webhooks', headers: root, payload: { url: `${gated.base}/held`, events: ['order.created'] } }))
        const order = async () => json(await own.request({ method: 'POST', url: '/orders', headers: await own.auth('carol', ['orders:write']), payload: ORDER }))
        const mine = (from = 0) => gated.got.slice(from).filter(r => (() => { try { verified(r, sub.secret); return true } catch { return false } })())
        // One delivery, held by the receiver: the sender waits on it, so the next 24 queue up and
        // are claimed together, more than its 16 connections to one receiver: the last 8 of that
        // batch wait for a connection.
        await order()
        await until(() => mine().length === 1, 'the first attempt')
        for (let i = 0; i < 24; i++) await order()
        await until(async () => (await own.store.webhooks.backlog()).pending >= 25, 'the deliveries queued')
        gated.release()
        await until(() => mine().length >= 17, 'the batch\'s first 16 attempts')
        // The premise: attempts of the batch are still to start (they wait for one of the 16, answered after 300 ms).
        assert.ok(mine().length < 25, `${mine().length} attempts had started`)
        const del = await own.request({ method: 'DELETE', url: `/webhooks/${sub.id}`, headers: root })
        assert.equal(del.statusCode, 204)
        const answered = gated.got.length
        await until(async () => (await own.store.webhooks.backlog()).pending === 0, 'no delivery pending', 10_000)
        assert.deepEqual(mine(answered).map(r => r.headers['webhook-id']), [])
        assert.equal((await own.request({ method: 'GET', url: `/webhooks/${sub.id}/deliveries`, headers: root })).statusCode, 404)
      } finally {
        await gated.close()
      }
    })

    it('reports the outbox in /metrics', async () => {
      const text = await t.scrape()
      for (const name of ['webhook_delivery_attempts_total{outcome="delivered"}', 'webhook_deliveries_pending', 'webhook_oldest_pending_delivery_age_seconds', 'event_streams_open']) {
        assert.ok(text.includes(name), name)
      }
    })
  })
}
