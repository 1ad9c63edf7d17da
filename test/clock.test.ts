import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from './helper.ts'
import { TestClock } from './support/clock.ts'
import { untilValue } from './support/poll.ts'
import { before } from './support/hooks.ts'

/**
 * The service on a clock the test moves: each rule that decides by time is seen from both sides of
 * its instant, through HTTP, on every store, with no wait for time to pass.
 */

const DAY_MS = 86_400_000

for (const kind of await storeKinds()) {
  describe(`the service on a test clock [${kind}]`, () => {
    const clock = new TestClock()
    let t: TestApp
    before(async () => {
      // The scheduler sleeps on real timers: after the clock moves, it looks again within 100 ms.
      t = await buildTestApp(kind, { SCHEDULE_RESCAN_MS: '100' }, { clock })
    })

    const at = (ms: number) => new Date(clock.now().getTime() + ms).toISOString()
    /** Alice's credentials, issued now by the clock (a token lives an hour, and the tests move days). */
    const alice = async () => ({ ...await t.auth('alice'), 'content-type': 'application/json' })
    const read = async (id: number) => json(await t.request({ method: 'GET', url: `/posts/${id}`, headers: await alice() }))

    it('replays an Idempotency-Key until the instant its 24 h end, and makes a new post from then on', async () => {
      const post = async (title: string) => await t.request({
        method: 'POST', url: '/posts', headers: { ...await alice(), 'idempotency-key': 'clocked' }, payload: { title, content: '' },
      })
      const first = await post('Clocked')
      assert.equal(first.statusCode, 201)
      clock.advance(DAY_MS - 1)
      const before = await post('Clocked')
      assert.equal(before.headers['idempotent-replayed'], 'true', '1 ms before the end: the first answer again')
      assert.equal(before.headers.location, first.headers.location)
      clock.advance(1)
      const after = await post('Clocked')
      assert.equal(after.statusCode, 201)
      assert.equal(after.headers['idempotent-replayed'], undefined, 'at the end: a new request')
      assert.notEqual(after.headers.location, first.headers.location)
    })

    it('shows a preview link until the instant it expires, and 404 from then on', async () => {
      const post = json(await t.request({ method: 'POST', url: '/posts', headers: await alice(), payload: { title: 'Preview', content: '', status: 'draft' } }))
      const link = json(await t.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers: await alice(), payload: { expires_in: 3600 } }))
      assert.equal(Date.parse(link.expires_at), clock.now().getTime() + 3_600_000)
      clock.advance(3_600_000 - 1)
      assert.equal((await t.request({ method: 'GET', url: link.url })).statusCode, 200, '1 ms before expires_at')
      const listed = json(await t.request({ method: 'GET', url: `/posts/${post.id}/preview-links`, headers: await alice() }))
      assert.deepEqual(listed.map((l: { id: number }) => l.id), [link.id], 'listed while it works')
      clock.advance(1)
      const gone = await t.request({ method: 'GET', url: link.url })
      assert.equal(gone.statusCode, 404, 'at expires_at')
      assert.equal(json(gone).code, 'PREVIEW_NOT_FOUND')
      assert.deepEqual(json(await t.request({ method: 'GET', url: `/posts/${post.id}/preview-links`, headers: await alice() })), [])
    })

    it('publishes a scheduled post when the clock reaches its publish_at, and not a moment before', async () => {
      const schedule = async (title: string, publishAt: string) => json(await t.request({
        method: 'POST', url: '/posts', headers: await alice(), payload: { title, content: '', status: 'scheduled', publish_at: publishAt },
      }))
      const due = at(3_600_000)
      const first = await schedule('First', due)
      const second = await schedule('Second', at(3_600_000 + 1000))
      clock.advance(3_600_000)
      const published = await untilValue(async () => await read(first.id), p => p.status === 'published', 15_000)
      assert.equal(published.published_at, due)
      assert.equal(Date.parse(published.updated_at), Date.parse(due), 'switched at the clock\'s time')
      // The pass that published the first did not find the second due: it is 1 s ahead of the clock.
      assert.equal((await read(second.id)).status, 'scheduled')
      clock.advance(1000)
      assert.equal((await untilValue(async () => await read(second.id), p => p.status === 'published', 15_000)).status, 'published')
    })

    it('refuses publish_at at the clock\'s now, and takes it 1 ms later', async () => {
      const create = async (publishAt: string) => await t.request({
        method: 'POST', url: '/posts', headers: await alice(), payload: { title: 'When', content: '', status: 'scheduled', publish_at: publishAt },
      })
      const now = await create(at(0))
      assert.equal(now.statusCode, 422)
      assert.deepEqual(json(now).errors.map((e: { code: string }) => e.code), ['PUBLISH_AT_IN_PAST'])
      assert.equal((await create(at(1))).statusCode, 201)
    })

    it('takes a JWT until its exp and the 30 s of tolerance have passed on the clock, cached or not', async () => {
      const token = { authorization: `Bearer ${await t.token('carol')}` }
      const get = async () => (await t.request({ method: 'GET', url: '/posts?limit=1', headers: token })).statusCode
      assert.equal(await get(), 200)
      // jose counts in whole seconds: the last second of the tolerance still verifies.
      clock.advance(3600_000 + 29_000)
      assert.equal(await get(), 200)
      clock.advance(1000)
      assert.equal(await get(), 401, 'past exp and the tolerance')
    })
  })
}
