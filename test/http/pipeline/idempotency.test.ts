import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Principal } from '../../../src/domain/principal.ts'
import { requestFingerprint } from '../../../src/http/pipeline/idempotency.ts'
import { answerWrite } from '../../../src/http/toolkit/write.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { TestClock } from '../../support/clock.ts'
import { createPost } from '../../support/posts.ts'
import { before } from '../../support/hooks.ts'

const body = (title: string) => JSON.stringify({ title, content: 'Once only.' })

async function count (t: TestApp, title: string): Promise<number> {
  await t.searchIndexed()
  const page = await t.store.posts.list({ filter: { q: title }, sort: [{ key: 'id', direction: 'asc' }], limit: 100 }, { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' })
  return page.items.filter(p => p.title === title).length
}

for (const kind of await storeKinds()) {
  describe(`Idempotency-Key on POST [${kind}]`, () => {
    let t: TestApp
    let alice: Record<string, string>
    let release: () => void = () => {}
    let entered: Promise<void>
    let enter: () => void = () => {}
    before(async () => {
      t = await buildTestApp(kind, {}, {
        // Any POST gets Idempotency-Key by being a POST; this one waits until the test lets it go.
        extend: app => {
          app.post('/test/slow-create', { schema: { hide: true } }, async (req, reply) => {
            enter()
            await new Promise<void>(resolve => { release = resolve })
            return await answerWrite(t.store, req, reply, async uow => {
              const post = await createPost(uow, { title: 'slow' }, { author: (req.principal as Principal).subject })
              return { status: 201, body: { id: post.id }, location: `/posts/${post.id}` }
            })
          })
        },
      })
      alice = { ...await t.auth('alice'), 'content-type': 'application/json' }
    })

    it('replays the first response byte for byte, with Idempotent-Replayed, and creates nothing again', async () => {
      const headers = { ...alice, 'idempotency-key': 'replay-1' }
      const first = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Replay me') })
      assert.equal(first.statusCode, 201)
      assert.equal(first.headers['idempotent-replayed'], undefined)
      const again = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Replay me') })
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
      for (const h of ['location', 'etag', 'content-type', 'last-modified', 'cache-control']) assert.equal(again.headers[h], first.headers[h], h)
      assert.notEqual(again.headers['x-request-id'], first.headers['x-request-id'], 'the exchange itself is new')
      assert.equal(await count(t, 'Replay me'), 1)
    })

    it('treats the same members in another order as the same body', async () => {
      const headers = { ...alice, 'idempotency-key': 'order-1' }
      const first = await t.request({ method: 'POST', url: '/posts', headers, payload: '{"title":"Ordered","content":"x"}' })
      const again = await t.request({ method: 'POST', url: '/posts', headers, payload: '{ "content": "x", "title": "Ordered" }' })
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
    })

    it('replays a return=minimal answer as it was: 201, Location, no body', async () => {
      const headers = { ...alice, 'idempotency-key': 'minimal-1', prefer: 'return=minimal' }
      const first = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Minimal') })
      const again = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Minimal') })
      assert.equal(first.statusCode, 201)
      assert.equal(again.statusCode, 201)
      assert.equal(again.body, '')
      assert.equal(again.headers.location, first.headers.location)
      assert.equal(again.headers['preference-applied'], 'return=minimal')
    })

    it('answers 422 IDEMPOTENCY_KEY_REUSED to the same key with another body, changing nothing', async () => {
      const headers = { ...alice, 'idempotency-key': 'reuse-1' }
      assert.equal((await t.request({ method: 'POST', url: '/posts', headers, payload: body('First body') })).statusCode, 201)
      const res = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Second body') })
      assert.equal(res.statusCode, 422)
      assert.equal(json(res).code, 'IDEMPOTENCY_KEY_REUSED')
      assert.equal(res.headers['content-type'], 'application/problem+json')
      assert.equal(await count(t, 'Second body'), 0)
    })

    it('answers 409 IDEMPOTENCY_KEY_IN_USE with Retry-After while the first request runs, then replays it', async () => {
      const headers = { ...alice, 'idempotency-key': 'slow-1' }
      entered = new Promise(resolve => { enter = resolve })
      const first = t.request({ method: 'POST', url: '/test/slow-create', headers, payload: '{}' })
      await entered
      const during = await t.request({ method: 'POST', url: '/test/slow-create', headers, payload: '{}' })
      assert.equal(during.statusCode, 409)
      assert.equal(json(during).code, 'IDEMPOTENCY_KEY_IN_USE')
      assert.match(String(during.headers['retry-after']), /^[1-9]\d*$/)
      release()
      const done = await first
      assert.equal(done.statusCode, 201)
      const after = await t.request({ method: 'POST', url: '/test/slow-create', headers, payload: '{}' })
      assert.equal(after.headers['idempotent-replayed'], 'true')
      assert.equal(after.body, done.body)
    })

    it('refuses malformed keys with 400 INVALID_IDEMPOTENCY_KEY and accepts 255 visible characters', async () => {
      for (const key of ['', 'x'.repeat(256), 'with space', 'caf\u00e9', 'tab\there']) {
        const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'idempotency-key': key }, payload: body('Bad key') })
        assert.equal(res.statusCode, 400, JSON.stringify(key))
        assert.equal(json(res).code, 'INVALID_IDEMPOTENCY_KEY')
      }
      assert.equal(await count(t, 'Bad key'), 0)
      const longest = '~!'.repeat(127) + 'k'
      const ok = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'idempotency-key': longest }, payload: body('Long key') })
      assert.equal(ok.statusCode, 201)
      const again = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'idempotency-key': longest }, payload: body('Long key') })
      assert.equal(again.headers['idempotent-replayed'], 'true')
    })

    it('refuses the same key for another version of the representation instead of replaying the wrong one', async () => {
      const headers = { ...alice, 'idempotency-key': 'version-1' }
      assert.equal((await t.request({ method: 'POST', url: '/posts', headers, payload: body('Versioned') })).statusCode, 201)
      const v2 = await t.request({ method: 'POST', url: '/posts', headers: { ...headers, accept: 'application/vnd.blog.v2+json' }, payload: body('Versioned') })
      assert.equal(v2.statusCode, 422)
      assert.equal(json(v2).code, 'IDEMPOTENCY_KEY_REUSED')
      assert.equal(await count(t, 'Versioned'), 1)
    })

    it('reports a malformed key before the body is validated', async () => {
      const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'idempotency-key': 'a b' }, payload: '{}' })
      assert.equal(res.statusCode, 400)
      assert.equal(json(res).code, 'INVALID_IDEMPOTENCY_KEY')
    })

    it('scopes a key to its principal and its path', async () => {
      const key = { 'idempotency-key': 'scoped-1' }
      const bob = { ...await t.auth('bob'), 'content-type': 'application/json' }
      const byAlice = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, ...key }, payload: body('Scoped') })
      const byBob = await t.request({ method: 'POST', url: '/posts', headers: { ...bob, ...key }, payload: body('Scoped') })
      const onV2 = await t.request({ method: 'POST', url: '/v2/posts', headers: { ...alice, ...key }, payload: body('Scoped') })
      for (const res of [byAlice, byBob, onV2]) {
        assert.equal(res.statusCode, 201)
        assert.equal(res.headers['idempotent-replayed'], undefined)
      }
      assert.equal(await count(t, 'Scoped'), 3)
    })

    it('stores nothing for a refused request: the key can be used again once the request is fixed', async () => {
      const headers = { ...alice, 'idempotency-key': 'fix-then-retry' }
      const invalid = await t.request({ method: 'POST', url: '/posts', headers, payload: JSON.stringify({ title: '', content: '' }) })
      assert.equal(invalid.statusCode, 422)
      const noScope = await t.request({ method: 'POST', url: '/posts', headers: { ...headers, ...await t.auth('alice', []) }, payload: body('Fixed') })
      assert.equal(noScope.statusCode, 403)
      const fixed = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Fixed') })
      assert.equal(fixed.statusCode, 201)
      assert.equal(fixed.headers['idempotent-replayed'], undefined)
    })

    it('creates one post from 20 concurrent requests with one key; the others replay it or get 409', async () => {
      const headers = { ...alice, 'idempotency-key': 'concurrent-1' }
      const answers = await Promise.all(Array.from({ length: 20 }, async () => await t.request({ method: 'POST', url: '/posts', headers, payload: body('Concurrent') })))
      const fresh = answers.filter(r => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined)
      assert.equal(fresh.length, 1)
      for (const r of answers) {
        if (r.statusCode === 201) assert.equal(r.body, fresh[0]!.body)
        else assert.equal(json(r).code, 'IDEMPOTENCY_KEY_IN_USE')
      }
      assert.equal(await count(t, 'Concurrent'), 1)
    })

    it('ignores Idempotency-Key on methods other than POST', async () => {
      const post = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: body('Put twice') }))
      for (const title of ['Put once', 'Put twice more']) {
        const res = await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: { ...alice, 'idempotency-key': 'put-1' }, payload: body(title) })
        assert.equal(res.statusCode, 200)
        assert.equal(json(res).title, title)
      }
    })
  })

  describe(`Idempotency-Key records expire [${kind}]`, () => {
    let t: TestApp
    const clock = new TestClock()
    before(async () => { t = await buildTestApp(kind, { IDEMPOTENCY_TTL_S: '1' }, { clock }) })

    it('replays within the time to live, and makes a new post after it', async () => {
      const headers = { ...await t.auth('alice'), 'content-type': 'application/json', 'idempotency-key': 'expiring' }
      const first = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Expiring') })
      const within = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Expiring') })
      assert.equal(within.headers['idempotent-replayed'], 'true')
      clock.advance(1000)
      const later = await t.request({ method: 'POST', url: '/posts', headers, payload: body('Expiring') })
      assert.equal(later.statusCode, 201)
      assert.equal(later.headers['idempotent-replayed'], undefined)
      assert.notEqual(later.headers.location, first.headers.location)
      assert.equal(await count(t, 'Expiring'), 2)
    })

    it('sweeps expired records', async () => {
      const headers = { ...await t.auth('alice'), 'content-type': 'application/json', 'idempotency-key': 'swept' }
      await t.request({ method: 'POST', url: '/posts', headers, payload: body('Swept') })
      assert.equal(await t.store.idempotency.sweep(clock.now()), 0, 'not yet expired')
      assert.ok(await t.store.idempotency.sweep(new Date(clock.now().getTime() + 1000)) >= 1)
    })
  })
}

for (const kind of await storeKinds()) {
  describe(`Idempotency-Key claims of a dead instance [${kind}]`, () => {
    let t: TestApp
    let headers: Record<string, string>
    const payload = { title: 'Dead claim', content: 'Once only.' }
    const scope = (key: string) => ({ principal: 'alice', method: 'POST', path: '/posts', key })
    /** A running claim on `key` as instance `owner` left it: held for a minute by its lock. */
    const plant = async (key: string, owner: string) => {
      const claim = await t.store.idempotency.claim(scope(key), requestFingerprint(1, 'application/json; charset=utf-8', payload), new Date(), { lockMs: 60_000, ttlMs: 86_400_000, owner })
      assert.equal(claim.outcome, 'claimed')
    }
    before(async () => {
      t = await buildTestApp(kind, { INSTANCE_ID: 'survivor' })
      headers = { ...await t.auth('alice'), 'content-type': 'application/json' }
    })

    it('takes over at once a claim whose owner\'s heartbeat lease has lapsed (before: 409 until the lock ended)', async () => {
      await t.store.idempotency.heartbeat('crashed', new Date(Date.now() - 1))
      await plant('after-a-crash', 'crashed')
      const res = await t.request({ method: 'POST', url: '/posts', headers: { ...headers, 'idempotency-key': 'after-a-crash' }, payload })
      assert.equal(res.statusCode, 201)
      const replay = await t.request({ method: 'POST', url: '/posts', headers: { ...headers, 'idempotency-key': 'after-a-crash' }, payload })
      assert.equal(replay.headers['idempotent-replayed'], 'true')
    })

    it('still answers 409 while the owner\'s lease is alive', async () => {
      await t.store.idempotency.heartbeat('alive', new Date(Date.now() + 60_000))
      await plant('still-running', 'alive')
      const res = await t.request({ method: 'POST', url: '/posts', headers: { ...headers, 'idempotency-key': 'still-running' }, payload })
      assert.equal(res.statusCode, 409)
      assert.equal(json(res).code, 'IDEMPOTENCY_KEY_IN_USE')
    })

    it('frees at start-up the claims its own name left, though their lease has not lapsed yet', async () => {
      // The process that held them was killed a moment ago: its lease runs on for a while.
      await t.store.idempotency.heartbeat('restarted', new Date(Date.now() + 60_000))
      await plant('before-the-restart', 'restarted')
      const again = await buildTestApp(kind, { INSTANCE_ID: 'restarted' }, { url: () => t.config.databaseUrl })
      const res = await again.request({ method: 'POST', url: '/posts', headers: { ...headers, 'idempotency-key': 'before-the-restart' }, payload })
      assert.equal(res.statusCode, 201)
    })

    it('never completes the effect twice: the dead owner, were it to come back, cannot complete the claim taken over', async () => {
      await t.store.idempotency.heartbeat('zombie', new Date(Date.now() - 1))
      const key = 'zombie-key'
      const fp = requestFingerprint(1, 'application/json; charset=utf-8', payload)
      const first = await t.store.idempotency.claim(scope(key), fp, new Date(), { lockMs: 60_000, ttlMs: 86_400_000, owner: 'zombie' })
      assert.equal(first.outcome, 'claimed')
      const res = await t.request({ method: 'POST', url: '/posts', headers: { ...headers, 'idempotency-key': key }, payload })
      assert.equal(res.statusCode, 201)
      const late = await t.store.transaction(async uow => await uow.idempotency.complete(scope(key), (first as { token: string }).token, { status: 201, headers: {}, body: '' }))
      assert.equal(late, false)
    })
  })
}
