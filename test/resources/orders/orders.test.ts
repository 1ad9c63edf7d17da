import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const order = (n = 1) => ({ customer_email: 'ada@example.com', items: Array.from({ length: n }, (_, i) => ({ sku: `SKU-${i}`, quantity: i + 1 })) })
const codes = (res: Parameters<typeof json>[0]) => json(res).errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`).sort()

for (const kind of await storeKinds()) {
  describe(`orders [${kind}]`, () => {
    let t: TestApp
    let ada: Record<string, string>
    let bob: Record<string, string>
    let admin: Record<string, string>
    before(async () => {
      t = await buildTestApp(kind)
      ada = await t.auth('ada', ['orders:write'])
      bob = await t.auth('bob', ['orders:write'])
      admin = await t.auth('root', ['admin'])
    })

    const place = async (headers = ada, body: unknown = order(2)) => await t.request({ method: 'POST', url: '/orders', headers, payload: body as object })

    it('places an order: 201, Location, PROCESSING, its items, private, an ETag', async () => {
      const res = await place()
      assert.equal(res.statusCode, 201)
      const o = json(res)
      assert.equal(res.headers.location, `/orders/${o.id}`)
      assert.equal(o.status, 'PROCESSING')
      assert.equal(o.customer_email, 'ada@example.com')
      assert.deepEqual(o.items, order(2).items)
      assert.match(o.created_at, /Z$/)
      assert.equal(res.headers['cache-control'], 'private, no-store')
      assert.match(String(res.headers.etag), /^"/)
    })

    it('reports every violation in one 422 with the seed codes', async () => {
      const res = await place(ada, { customer_email: 'not-an-email', items: [{ sku: '', quantity: -1 }, { sku: 'x'.repeat(65), quantity: 0 }, { sku: 'ok', quantity: 'two' }], extra: 1 })
      assert.equal(res.statusCode, 422)
      assert.deepEqual(codes(res), ['customer_email:INVALID_EMAIL', 'extra:UNKNOWN_FIELD', 'items/0/quantity:NEGATIVE_VALUE', 'items/0/sku:INVALID_FORMAT',
        'items/1/quantity:OUT_OF_RANGE', 'items/1/sku:INVALID_FORMAT', 'items/2/quantity:INVALID_TYPE'])
      assert.deepEqual(codes(await place(ada, { customer_email: 'a@b.co', items: [] })), ['items:TOO_SHORT'])
      assert.deepEqual(codes(await place(ada, { customer_email: 'a@b.co', items: [{ sku: '   ', quantity: 1 }] })), ['items/0/sku:INVALID_FORMAT'], 'white space alone is no sku')
      assert.equal((await place(ada, { customer_email: 'a@b.co', items: [{ sku: ' A 1 ', quantity: 1 }] })).statusCode, 201, 'white space around a sku is kept')
      assert.deepEqual(codes(await place(ada, {})), ['customer_email:REQUIRED', 'items:REQUIRED'])
      assert.equal((await place(ada, { customer_email: 'a@b.co', items: [{ sku: 'x'.repeat(64), quantity: 1 }] })).statusCode, 201, '64 characters is a sku')
    })

    it('caps errors[] at 100 entries for a body with thousands of violations', async () => {
      const res = await place(ada, { customer_email: 'x', items: Array.from({ length: 1000 }, () => ({})) })
      assert.equal(res.statusCode, 422)
      assert.equal(json(res).errors.length, 100)
      const huge = await place(ada, { customer_email: 'x', items: Array.from({ length: 1001 }, () => ({})) })
      assert.deepEqual(codes(huge), ['items:TOO_LONG'], 'an array over 1000 entries is refused before validation')
    })

    it('refuses unknown query parameters and includes on single orders, their items and cancel', async () => {
      const o = json(await place())
      for (const url of [`/orders/${o.id}?include=foo`, `/orders/${o.id}?x=1`, `/orders/${o.id}/items?limit=1`]) {
        assert.equal((await t.request({ method: 'GET', url, headers: ada })).statusCode, 422, url)
      }
      assert.equal((await t.request({ method: 'POST', url: `/orders/${o.id}/cancel?x=1`, headers: ada })).statusCode, 422)
      assert.equal(json(await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: ada })).status, 'PROCESSING', 'the refused cancel changed nothing')
      assert.equal((await t.request({ method: 'GET', url: `/orders/${o.id}?include=items`, headers: ada })).statusCode, 200)
    })

    it('links self, items and cancel while PROCESSING; cancel answers 200 CANCELLED; again 409 ORDER_NOT_CANCELLABLE', async () => {
      const o = json(await place())
      const read = json(await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: ada }))
      assert.deepEqual(read._links, { self: { href: `/orders/${o.id}` }, items: { href: `/orders/${o.id}/items` }, cancel: { href: `/orders/${o.id}/cancel`, method: 'POST' } })
      const cancelled = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: ada })
      assert.equal(cancelled.statusCode, 200)
      assert.equal(json(cancelled).status, 'CANCELLED')
      assert.deepEqual(Object.keys(json(cancelled)._links), ['self', 'items'], 'no cancel link once cancelled')
      const again = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: ada })
      assert.equal(again.statusCode, 409)
      assert.equal(json(again).code, 'ORDER_NOT_CANCELLABLE')
    })

    it('gives one 200 and one 409 to two concurrent cancels', async () => {
      const o = json(await place())
      const both = await Promise.all([1, 2].map(async () => (await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: ada })).statusCode))
      assert.deepEqual(both.sort(), [200, 409])
    })

    it('replays a cancel made with the same Idempotency-Key instead of answering 409', async () => {
      const o = json(await place())
      const headers = { ...ada, 'idempotency-key': `cancel-${o.id}` }
      const first = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers })
      const again = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers })
      assert.equal(again.statusCode, 200)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
      const create = { ...ada, 'idempotency-key': 'place-once' }
      const placed = await place(create)
      assert.equal((await place(create)).body, placed.body)
    })

    it('cancel takes no input: no body or {} is a cancel; malformed JSON, another media type or a member is refused and changes nothing', async () => {
      const cancel = async (id: number, extra: Record<string, unknown> = {}) => await t.request({ method: 'POST', url: `/orders/${id}/cancel`, ...extra, headers: { ...ada, ...(extra.headers as object ?? {}) } })
      const refusals: [Record<string, unknown>, number, string][] = [
        [{ headers: { 'content-type': 'application/json' }, payload: '{not json' }, 400, 'MALFORMED_JSON'],
        [{ headers: { 'content-type': 'text/xml' }, payload: '<cancel/>' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
        [{ headers: { 'content-type': 'application/json' }, payload: '{"reason":"changed my mind"}' }, 422, 'VALIDATION_FAILED'],
      ]
      const o = json(await place())
      for (const [extra, status, code] of refusals) {
        const res = await cancel(o.id, extra)
        assert.equal(res.statusCode, status, JSON.stringify(extra))
        assert.equal(json(res).code, code)
      }
      assert.equal(json(await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: ada })).status, 'PROCESSING', 'a refused cancel cancels nothing')
      const keyed = { headers: { 'idempotency-key': `empty-${o.id}` } }
      assert.equal((await cancel(o.id, keyed)).statusCode, 200, 'no body at all')
      const replay = await cancel(o.id, { headers: { 'idempotency-key': `empty-${o.id}`, 'content-type': 'application/json' }, payload: '{}' })
      assert.equal(replay.headers['idempotent-replayed'], 'true', 'no body and {} are the same request')
      const other = json(await place())
      assert.equal((await cancel(other.id, { headers: { 'content-type': 'application/json' }, payload: '' })).statusCode, 200, 'a JSON type with nothing after it')
    })

    it('honours If-Match on cancel: 412 for a stale tag, and the order stays PROCESSING; the current tag cancels', async () => {
      const placed = await place()
      const o = json(placed)
      const stale = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: { ...ada, 'if-match': '"stale"' } })
      assert.equal(stale.statusCode, 412)
      assert.equal(json(stale).code, 'PRECONDITION_FAILED')
      assert.equal(json(await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: ada })).status, 'PROCESSING')
      const current = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: { ...ada, 'if-match': placed.headers.etag as string } })
      assert.equal(current.statusCode, 200)
      const again = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: { ...ada, 'if-match': current.headers.etag as string } })
      assert.equal(again.statusCode, 409, 'a current tag on a cancelled order: the state refuses')
      const bobs = await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: { ...bob, 'if-match': '*' } })
      assert.equal(bobs.statusCode, 404, 'another owner learns nothing from a precondition')
    })

    it('keeps orders to their owner (others get 404) and shows admins every order', async () => {
      const o = json(await place())
      for (const url of [`/orders/${o.id}`, `/orders/${o.id}/items`]) {
        assert.equal(json(await t.request({ method: 'GET', url, headers: bob })).code, 'ORDER_NOT_FOUND', url)
      }
      assert.equal((await t.request({ method: 'POST', url: `/orders/${o.id}/cancel`, headers: bob })).statusCode, 404)
      assert.equal((await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: admin })).statusCode, 200)
      const bobs = json(await t.request({ method: 'GET', url: '/orders?limit=100', headers: bob }))
      assert.ok(!bobs.some((x: { id: number }) => x.id === o.id))
      const all = json(await t.request({ method: 'GET', url: '/orders?limit=100', headers: admin }))
      assert.ok(all.some((x: { id: number }) => x.id === o.id))
    })

    it('needs orders:write: 401 without a credential, 403 without the scope', async () => {
      assert.equal((await t.request({ method: 'GET', url: '/orders' })).statusCode, 401)
      assert.equal((await t.request({ method: 'POST', url: '/orders', headers: await t.auth('ada', ['posts:write']), payload: order() })).statusCode, 403)
    })

    it('lists by the collection rules: status filter, sort, fields, include=items, cursor, count', async () => {
      const carl = await t.auth('carl', ['orders:write'])
      const ids: number[] = []
      for (let i = 0; i < 5; i++) ids.push(json(await place(carl, order(i + 1))).id)
      await t.request({ method: 'POST', url: `/orders/${ids[0]}/cancel`, headers: carl })
      const list = await t.request({ method: 'GET', url: '/orders?sort=id&limit=2', headers: { ...carl, prefer: 'count=exact' } })
      assert.equal(list.headers['x-total-count'], '5')
      assert.deepEqual(json(list).map((o: { id: number }) => o.id), ids.slice(0, 2))
      assert.equal(json(list)[0].items, undefined, 'items only with include=items')
      assert.equal(list.headers['cache-control'], 'private, no-store')
      const next = /<([^>]+)>;\s*rel="next"/.exec(String(list.headers.link))![1]!
      assert.deepEqual(json(await t.request({ method: 'GET', url: next, headers: carl })).map((o: { id: number }) => o.id), ids.slice(2, 4))
      const withItems = json(await t.request({ method: 'GET', url: '/orders?sort=id&include=items', headers: carl }))
      assert.deepEqual(withItems.map((o: { items: unknown[] }) => o.items.length), [1, 2, 3, 4, 5])
      const cancelled = json(await t.request({ method: 'GET', url: '/orders?status=CANCELLED', headers: carl }))
      assert.deepEqual(cancelled.map((o: { id: number }) => o.id), [ids[0]])
      assert.deepEqual(json(await t.request({ method: 'GET', url: '/orders?fields=status&limit=1', headers: carl }))[0], { status: 'PROCESSING', _links: { self: { href: `/orders/${ids[4]}` } } })
      assert.deepEqual(json(await t.request({ method: 'GET', url: '/orders?fields=items&limit=1', headers: carl }))[0].items, order(5).items, 'fields=items reads the items')
      for (const bad of ['/orders?include=posts', '/orders?status=SHIPPED', '/orders?sort=title', '/orders?colour=red', '/orders?fields=title']) {
        assert.equal((await t.request({ method: 'GET', url: bad, headers: carl })).statusCode, 422, bad)
      }
    })

    it('refuses a cursor of another collection with 400 INVALID_CURSOR', async () => {
      await t.request({ method: 'POST', url: '/posts', headers: await t.auth('ada', ['posts:write']), payload: { title: 'a', content: '' } })
      await t.request({ method: 'POST', url: '/posts', headers: await t.auth('ada', ['posts:write']), payload: { title: 'b', content: '' } })
      const posts = await t.request({ method: 'GET', url: '/posts?limit=1' })
      const cursor = new URL(/<([^>]+)>;\s*rel="next"/.exec(String(posts.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
      const res = await t.request({ method: 'GET', url: `/orders?cursor=${encodeURIComponent(cursor)}`, headers: ada })
      assert.equal(res.statusCode, 400)
      assert.equal(json(res).code, 'INVALID_CURSOR')
    })

    it('serves items, ETags, 304 and version 2 (orderId) by path and by media type', async () => {
      const o = json(await place())
      const items = await t.request({ method: 'GET', url: `/orders/${o.id}/items`, headers: ada })
      assert.deepEqual(json(items), order(2).items)
      const one = await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: ada })
      assert.equal((await t.request({ method: 'GET', url: `/orders/${o.id}`, headers: { ...ada, 'if-none-match': String(one.headers.etag) } })).statusCode, 304)
      for (const [url, headers] of [[`/v2/orders/${o.id}`, ada], [`/orders/${o.id}`, { ...ada, accept: 'application/vnd.blog.v2+json' }]] as const) {
        const v2 = await t.request({ method: 'GET', url, headers })
        assert.equal(v2.headers['api-version'], '2')
        assert.equal(json(v2).orderId, o.id)
        assert.equal(json(v2).id, undefined)
        assert.notEqual(v2.headers.etag, one.headers.etag)
      }
      assert.equal(json(await t.request({ method: 'GET', url: `/v2/orders/${o.id}`, headers: ada }))._links.self.href, `/v2/orders/${o.id}`)
    })

    it('is linked from the API index and described in the OpenAPI document', async () => {
      assert.equal(json(await t.request({ method: 'GET', url: '/' }))._links.orders.href, '/orders')
      const doc = json(await t.request({ method: 'GET', url: '/openapi.json' }))
      for (const [path, method] of <[string, string][]>[['/orders', 'get'], ['/orders', 'post'], ['/orders/{order_id}', 'get'], ['/orders/{order_id}/items', 'get'], ['/orders/{order_id}/cancel', 'post'], ['/v2/orders', 'get']]) {
        assert.ok(doc.paths[path]?.[method], `${method} ${path}`)
      }
      assert.ok(doc.paths['/orders/{order_id}/cancel'].post.responses['409'])
    })
  })
}
