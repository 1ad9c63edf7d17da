import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { until } from '../../support/poll.ts'
import { openStream, type SseStream } from '../../support/sse.ts'
import { before } from '../../support/hooks.ts'

const ENV = { EVENTS_POLL_MS: '20', OVERLOAD_MAX_IN_FLIGHT: '5', REQUEST_TIMEOUT_MS: '1500' }
const ORDER = { customer_email: 'a@example.com', items: [{ sku: 'book', quantity: 1 }] }
type Headers = Record<string, string>

for (const kind of await storeKinds()) {
  describe(`GET /events [${kind}]`, () => {
    let t: TestApp
    let base: string
    let admin: Headers
    let carol: Headers
    let dave: Headers
    const open: SseStream[] = []
    before(async () => {
      t = await buildTestApp(kind, ENV)
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
      admin = await t.auth('root', ['admin'])
      carol = await t.auth('carol', ['orders:write'])
      dave = await t.auth('dave', ['orders:write'])
    })
    after(async () => {
      for (const s of open) s.close()
    })
    const stream = async (headers: Headers, query = '') => {
      const s = await openStream(`${base}/events${query}`, headers)
      open.push(s)
      return s
    }
    const order = async (who: Headers) => json(await t.request({ method: 'POST', url: '/orders', headers: who, payload: ORDER }))
    const ids = (s: SseStream, type?: string) => s.events.filter(e => type === undefined || e.event === type).map(e => JSON.parse(e.data).data.id)

    it('answers 406 without text/event-stream in Accept, 401 without a credential, 422 for an unknown type', async () => {
      const json406 = await t.request({ method: 'GET', url: '/events', headers: { ...admin, accept: 'application/json' } })
      assert.equal(json406.statusCode, 406)
      assert.equal(json406.headers['content-type'], 'application/problem+json')
      assert.equal((await t.request({ method: 'GET', url: '/events', headers: { accept: 'text/event-stream' } })).statusCode, 401)
      const bad = await t.request({ method: 'GET', url: '/events?types=order.created,nope', headers: { ...admin, accept: 'text/event-stream' } })
      assert.equal(bad.statusCode, 422)
      assert.equal(json(bad).errors[0].field, 'types')
      // The types are the registered resources', in the registry's order.
      // Every type the registered parts raise, in the registry's order (the resources', then those of the resources the facilities carry).
      assert.equal(json(bad).errors[0].message, `"nope" is not an event type; use any of ${t.context.eventTypes.join(', ')}.`)
      assert.ok(t.context.eventTypes.includes('post.created') && t.context.eventTypes.includes('session.reuse_detected'))
    })

    it('streams new events as id/event/data, each principal seeing only what it may', async () => {
      const all = await stream(admin)
      const mine = await stream(carol)
      assert.equal(all.status, 200)
      assert.match(String(all.headers['content-type']), /^text\/event-stream/)
      const a = await order(carol)
      const b = await order(dave)
      await until(() => ids(all).includes(b.id), 'the admin stream')
      const e = all.events.find(e => JSON.parse(e.data).data.id === a.id)!
      assert.equal(e.event, 'order.created')
      const event = JSON.parse(e.data)
      assert.equal(e.id, event.id)
      assert.deepEqual(Object.keys(event).sort(), ['actor', 'data', 'id', 'occurred_at', 'type'])
      // Carol's order was placed with her JWT: the identity provider's subject caused it.
      assert.deepEqual(event.actor, { kind: 'jwt', id: null, name: 'carol' })
      // A stream delivers in order: had dave's order reached carol's stream, it came before her next one.
      const c = await order(carol)
      await until(() => ids(mine).includes(c.id), 'carol\'s next order on her stream')
      assert.deepEqual(ids(mine), [a.id, c.id], 'carol sees her orders, not dave\'s')
    })

    it('raises the post events: created and published on a published create, unpublished, deleted; each seen by whom it may', async () => {
      const alice = await t.auth('alice', ['posts:write'])
      const all = await stream(admin)
      const bob = await stream(dave)
      const own = await stream(alice)
      const post = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Hello', content: 'x' } }))
      const draft = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Secret', content: 'y', status: 'draft' } }))
      const put = (id: number, status: string) => t.request({ method: 'PUT', url: `/posts/${id}`, headers: alice, payload: { title: 'Hello', content: 'x', status } })
      assert.equal((await put(post.id, 'draft')).statusCode, 200)
      assert.equal((await put(post.id, 'published')).statusCode, 200)
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${post.id}`, headers: alice })).statusCode, 204)
      const exported = await t.request({ method: 'POST', url: '/exports', headers: admin, payload: { format: 'ndjson' } })
      assert.equal(exported.statusCode, 202)
      await until(() => all.events.some(e => e.event === 'export.succeeded'), 'the export event')
      const seq = (s: SseStream) => s.events.filter(e => e.event.startsWith('post.')).map(e => `${e.event} ${JSON.parse(e.data).data.id}`)
      const p = post.id
      const d = draft.id
      const expected = [`post.created ${p}`, `post.published ${p}`, `post.created ${d}`, `post.updated ${p}`, `post.unpublished ${p}`, `post.updated ${p}`, `post.published ${p}`, `post.deleted ${p}`]
      assert.deepEqual(seq(all), expected)
      await until(() => seq(own).length === expected.length, 'the author\'s stream')
      assert.deepEqual(seq(own), expected, 'the author sees all of her posts\' events')
      await until(() => seq(bob).includes(`post.deleted ${p}`), 'the other user\'s stream')
      assert.deepEqual(seq(bob), [`post.created ${p}`, `post.published ${p}`, `post.updated ${p}`, `post.published ${p}`, `post.deleted ${p}`], 'another user sees only the published post')
      const deleted = all.events.find(e => e.event === 'post.deleted')!
      assert.deepEqual(JSON.parse(deleted.data).data, { id: p })
      const created = JSON.parse(all.events.find(e => e.event === 'post.created')!.data).data
      assert.deepEqual([created.id, created.title, created.status, created.author], [p, 'Hello', 'published', 'alice'])
      assert.ok(!bob.events.some(e => e.event.startsWith('export.')), 'an export is its owner\'s')
      assert.equal(JSON.parse(all.events.find(e => e.event === 'export.succeeded')!.data).data.id, json(exported).id)
    })

    it('resumes after Last-Event-ID or ?after=, filters by ?types=, and sends each event once, in id order', async () => {
      const first = await order(carol)
      const cancelled = await t.request({ method: 'POST', url: `/orders/${first.id}/cancel`, headers: carol })
      assert.equal(cancelled.statusCode, 200)
      const live = await stream(admin)
      const all = (await t.store.events.list(0, 1000)).filter(e => e.webhookId === null)
      const start = all.find(e => e.type === 'order.created' && JSON.parse(e.data).id === first.id)!
      const byHeader = await stream({ ...admin, 'last-event-id': String(start.id - 1) })
      const byQuery = await stream(admin, `?after=${start.id - 1}&types=order.cancelled`)
      const later = await order(carol)
      for (const s of [byHeader, byQuery, live]) await until(() => s.events.length > 0 && (s === byQuery ? ids(s).includes(first.id) : ids(s).includes(later.id)), 'the resumed streams')
      assert.deepEqual(byHeader.events.slice(0, 2).map(e => [e.event, JSON.parse(e.data).data.id]), [['order.created', first.id], ['order.cancelled', first.id]])
      assert.ok(byQuery.events.every(e => e.event === 'order.cancelled'))
      for (const s of [byHeader, live]) {
        const n = s.events.map(e => Number(e.id))
        assert.deepEqual(n, [...n].sort((x, y) => x - y))
        assert.equal(new Set(n).size, n.length)
      }
      assert.ok(!ids(live).includes(first.id), 'a stream without a position has only new events')
    })

    it('begins with a reset event when resuming before what retention deleted', async () => {
      await order(carol)
      const last = await t.store.events.lastId()
      await t.store.transaction(async uow => { await uow.events.prune(new Date(Date.now() + 60_000), last - 1) })
      const s = await stream(admin, '?after=1')
      await until(() => s.events.length >= 1, 'the reset')
      assert.equal(s.events[0]!.event, 'reset')
      assert.equal(s.events[0]!.id, undefined)
      await until(() => s.events.length >= 2, 'the oldest event kept')
      assert.equal(Number(s.events[1]!.id), last)
    })

    it('keeps open streams out of the in-flight bound and the request deadline', async () => {
      // OVERLOAD_MAX_IN_FLIGHT is 5: with more streams than that open, requests are still served.
      const streams: SseStream[] = []
      for (let i = 0; i < 7; i++) streams.push(await stream(carol))
      assert.ok(streams.every(s => s.status === 200))
      const res = await fetch(`${base}/orders`, { headers: carol })
      assert.equal(res.status, 200)
      // Past REQUEST_TIMEOUT_MS (1.5 s) the streams are still open and still deliver. Real time on
      // purpose: a request's deadline is a timer on the machine's clock.
      await sleep(2000)
      const o = await order(carol)
      for (const s of streams) await until(() => ids(s).includes(o.id), 'an event after the deadline')
      const text = await t.scrape()
      const openNow = Number(/^event_streams_open (\d+)/m.exec(text)?.[1])
      assert.ok(openNow >= 7, `event_streams_open ${openNow}`)
    })

    it('keeps an idle stream open with comment lines', async () => {
      const s = await stream(dave, '?types=order.cancelled')
      await until(() => s.comments >= 1, 'a heartbeat', 30_000)
      assert.equal(s.events.length, 0)
    })

    it('ends every stream when the app closes', async () => {
      const s = await stream(admin)
      await t.app.close()
      await s.ended
      assert.ok(open.length > 0)
    })
  })
}
