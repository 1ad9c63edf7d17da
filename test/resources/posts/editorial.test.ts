import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../../src/context.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { TestClock } from '../../support/clock.ts'
import { untilValue } from '../../support/poll.ts'
import { before } from '../../support/hooks.ts'

type Headers = Record<string, string>

describe('the REVISIONS_KEEP setting', () => {
  it('is 50 by default and takes 1 to 10 000; outside or not a number, start-up stops naming it', () => {
    assert.equal(loadConfig({}).editorial.revisionsKeep, 50)
    assert.equal(loadConfig({ REVISIONS_KEEP: '1' }).editorial.revisionsKeep, 1)
    assert.equal(loadConfig({ REVISIONS_KEEP: '10000' }).editorial.revisionsKeep, 10_000)
    for (const bad of ['0', '10001', 'all', '-5']) assert.throws(() => loadConfig({ REVISIONS_KEEP: bad }), /REVISIONS_KEEP/, bad)
  })
})
/** The apps' clock: a schedule falls due when the test moves it on. */
const clock = new TestClock()
const inMs = (ms: number) => new Date(clock.now().getTime() + ms).toISOString()

for (const kind of await storeKinds()) {
  describe(`editorial workflow [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    let bob: Headers
    let admin: Headers
    before(async () => {
      // The scheduler sleeps on real timers: after the clock moves, it looks again within 100 ms.
      t = await buildTestApp(kind, { SCHEDULE_RESCAN_MS: '100' }, { clock })
      alice = await t.auth('alice', ['posts:write'])
      bob = await t.auth('bob', ['posts:write'])
      admin = await t.auth('root', ['admin'])
    })

    const create = async (body: object, headers: Headers = alice) => await t.request({ method: 'POST', url: '/posts', headers, payload: body })
    const get = async (url: string, headers: Headers = alice) => await t.request({ method: 'GET', url, headers })
    const patch = async (id: number, body: object, headers: Headers = alice) =>
      await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify(body) })
    /** The types of the events recorded for post `id` after event `after`, in order. */
    const eventsOf = async (id: number, after: number) => (await t.store.events.list(after, 1000))
      .filter(e => (JSON.parse(e.data) as { id: number }).id === id).map(e => e.type)
    const errorCodes = (res: { json (): unknown }) => (res.json() as { errors: { field: string, code: string }[] }).errors.map(e => `${e.field}:${e.code}`)

    describe('scheduling rules', () => {
      it('answers 422 PUBLISH_AT_REQUIRED, PUBLISH_AT_IN_PAST and PUBLISH_AT_NOT_ALLOWED', async () => {
        let res = await create({ title: 'x', content: '', status: 'scheduled' })
        assert.equal(res.statusCode, 422)
        assert.deepEqual(errorCodes(res), ['publish_at:PUBLISH_AT_REQUIRED'])
        res = await create({ title: 'x', content: '', status: 'scheduled', publish_at: null })
        assert.deepEqual(errorCodes(res), ['publish_at:PUBLISH_AT_REQUIRED'])
        res = await create({ title: 'x', content: '', status: 'scheduled', publish_at: inMs(-1000) })
        assert.equal(res.statusCode, 422)
        assert.deepEqual(errorCodes(res), ['publish_at:PUBLISH_AT_IN_PAST'])
        for (const status of ['draft', 'published', 'archived']) {
          res = await create({ title: 'x', content: '', status, publish_at: inMs(60_000) })
          assert.equal(res.statusCode, 422, status)
          assert.deepEqual(errorCodes(res), ['publish_at:PUBLISH_AT_NOT_ALLOWED'])
        }
        // Absent or null with any other status is fine.
        assert.equal((await create({ title: 'x', content: '', status: 'draft', publish_at: null })).statusCode, 201)
      })

      it('refuses a malformed publish_at with 422 and accepts any RFC 3339 offset, stored in UTC', async () => {
        for (const bad of ['tomorrow', '2030-01-01', '2030-01-01T10:00:00', 42, '2030-02-30T10:00:00Z']) {
          const res = await create({ title: 'x', content: '', status: 'scheduled', publish_at: bad })
          assert.equal(res.statusCode, 422, String(bad))
          assert.equal(errorCodes(res)[0]?.split(':')[0], 'publish_at', String(bad))
        }
        const res = await create({ title: 'x', content: '', status: 'scheduled', publish_at: '2100-01-01T10:00:00.5+02:00' })
        assert.equal(res.statusCode, 201)
        assert.equal(json(res).publish_at, '2100-01-01T08:00:00.500Z')
        assert.equal(json(res).status, 'scheduled')
      })

      it('shows a scheduled post like a draft: to its author and admins only, in lists too, with status=scheduled', async () => {
        const post = json(await create({ title: 'Soon', content: '', status: 'scheduled', publish_at: inMs(3_600_000) }))
        assert.equal((await get(`/posts/${post.id}`)).statusCode, 200)
        assert.equal((await get(`/posts/${post.id}`, admin)).statusCode, 200)
        assert.equal((await get(`/posts/${post.id}`, bob)).statusCode, 404)
        assert.equal((await t.request({ method: 'GET', url: `/posts/${post.id}` })).statusCode, 404)
        assert.equal((await patch(post.id, { title: 'mine now' }, bob)).statusCode, 404)
        assert.match(String((await get(`/posts/${post.id}`)).headers['cache-control']), /private/)

        const ids = (res: { json (): unknown }) => (res.json() as { id: number }[]).map(p => p.id)
        assert.ok(ids(await get('/posts?status=scheduled&limit=100')).includes(post.id))
        assert.ok(!ids(await get('/posts?status=draft&limit=100')).includes(post.id))
        assert.ok(!ids(await get('/posts?status=scheduled&limit=100', bob)).includes(post.id))
        assert.ok(!ids(await t.request({ method: 'GET', url: '/posts?limit=100' })).includes(post.id))
        const listed = json(await get('/posts?status=scheduled&fields=id,status,publish_at&limit=100')).find((p: { id: number }) => p.id === post.id)
        assert.deepEqual(listed, { id: post.id, status: 'scheduled', publish_at: post.publish_at })
      })

      it('reschedules by PATCH of publish_at, and cancels by a merge patch of the status alone, clearing publish_at', async () => {
        const post = json(await create({ title: 'Plan', content: '', status: 'scheduled', publish_at: inMs(3_600_000) }))
        const moved = inMs(7_200_000)
        let res = await patch(post.id, { publish_at: moved })
        assert.equal(res.statusCode, 200)
        assert.equal(json(res).publish_at, moved)
        res = await patch(post.id, { publish_at: inMs(-60_000) })
        assert.deepEqual(errorCodes(res), ['publish_at:PUBLISH_AT_IN_PAST'])
        res = await patch(post.id, { status: 'draft' })
        assert.equal(res.statusCode, 200)
        assert.equal(json(res).status, 'draft')
        assert.equal(json(res).publish_at, null)
        // A draft sent a publish_at with it stays a draft: 422.
        assert.deepEqual(errorCodes(await patch(post.id, { publish_at: inMs(60_000) })), ['publish_at:PUBLISH_AT_NOT_ALLOWED'])
      })

      it('exports the scheduled posts when an export asks for status scheduled', async () => {
        const res = await t.request({ method: 'POST', url: '/exports', headers: admin, payload: { format: 'ndjson', filter: { status: 'scheduled' } } })
        assert.equal(res.statusCode, 202)
        assert.equal(json(res).status, 'pending')
      })

      it('publishes at once when a PUT sends the GET representation back with status published', async () => {
        const post = json(await create({ title: 'Now', content: '', status: 'scheduled', publish_at: inMs(3_600_000) }))
        const res = await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { ...post, status: 'published' } })
        assert.equal(res.statusCode, 200)
        assert.equal(json(res).status, 'published')
        assert.equal(json(res).publish_at, null)
      })

      it('switches a scheduled post to published once the clock reaches publish_at, as system, once', async () => {
        const publishAt = inMs(1200)
        const post = json(await create({ title: 'Timed', content: 'c', status: 'scheduled', publish_at: publishAt }))
        clock.advance(1200)
        const seen = await untilValue(async () => json(await get(`/posts/${post.id}`)), p => {
          // Until the switch a read shows it as scheduled, with its publish_at.
          if (p.status === 'scheduled') assert.equal(p.publish_at, publishAt)
          return p.status === 'published'
        }, 15_000)
        assert.equal(seen.status, 'published')
        assert.equal(seen.publish_at, null)
        assert.equal(seen.published_at, publishAt, 'published_at is the publish_at it was scheduled for')
        // The service's own record of when it switched: the clock's time, which stands at publish_at.
        assert.equal(Date.parse(seen.updated_at), Date.parse(publishAt))
        assert.equal((await t.request({ method: 'GET', url: `/posts/${post.id}` })).statusCode, 200, 'now public')
        const revisions = json(await get(`/posts/${post.id}/revisions`))
        assert.deepEqual(revisions.map((r: { number: number, status: string, editor: string }) => [r.number, r.status, r.editor]),
          [[2, 'published', 'system'], [1, 'scheduled', 'alice']])
        assert.deepEqual(await eventsOf(post.id, 0), ['post.created', 'post.updated', 'post.published'], 'the switch raised post.published once')
      })
    })

    describe('revisions', () => {
      it('records one per change, numbered per post, newest first, the newest equal to the post', async () => {
        const post = json(await create({ title: 'one', content: 'a' }))
        await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { title: 'two', content: 'b', status: 'draft' } })
        const now = json(await patch(post.id, { title: 'three' }))
        const list = json(await get(`/posts/${post.id}/revisions`))
        assert.deepEqual(list.map((r: object) => Object.keys(r).sort()), Array(3).fill(['created_at', 'editor', 'number', 'status', 'title']))
        assert.deepEqual(list.map((r: { number: number, title: string }) => [r.number, r.title]), [[3, 'three'], [2, 'two'], [1, 'one']])
        const newest = json(await get(`/posts/${post.id}/revisions/3`))
        assert.deepEqual(newest, {
          number: 3, title: now.title, content: now.content, status: now.status, slug: now.slug, tags: now.tags, excerpt: now.excerpt, publish_at: now.publish_at, editor: 'alice', created_at: now.updated_at, meta_title: now.meta_title, meta_description: now.meta_description, canonical_url: now.canonical_url,
        })
        // Another post's numbers start at 1.
        const other = json(await create({ title: 'other', content: '' }))
        assert.deepEqual(json(await get(`/posts/${other.id}/revisions`)).map((r: { number: number }) => r.number), [1])
      })

      it('pages, chooses fields and counts like every list', async () => {
        const post = json(await create({ title: 'r1', content: '' }))
        for (let i = 2; i <= 5; i++) await patch(post.id, { title: `r${i}` })
        const first = await get(`/posts/${post.id}/revisions?limit=2&fields=number,editor`, { ...alice, prefer: 'count=exact' })
        assert.equal(first.statusCode, 200)
        assert.deepEqual(json(first), [{ number: 5, editor: 'alice' }, { number: 4, editor: 'alice' }])
        assert.equal(first.headers['x-total-count'], '5')
        const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1]
        assert.ok(next)
        const second = await get(next.replace(/^https?:\/\/[^/]+/, ''))
        assert.deepEqual(json(second).map((r: { number: number }) => r.number), [3, 2])
        assert.deepEqual(json(await get(`/posts/${post.id}/revisions?sort=number&page=2&limit=2`)).map((r: { number: number }) => r.number), [3, 4])
        assert.equal((await get(`/posts/${post.id}/revisions?fields=colour`)).statusCode, 422)
        assert.equal((await get(`/posts/${post.id}/revisions?sort=title`)).statusCode, 422)
      })

      it('gives a revision a strong ETag and answers 304 to it', async () => {
        const post = json(await create({ title: 'tag', content: '' }))
        const res = await get(`/posts/${post.id}/revisions/1`)
        const etag = String(res.headers.etag)
        assert.match(etag, /^"/)
        assert.equal((await t.request({ method: 'GET', url: `/posts/${post.id}/revisions/1`, headers: { ...alice, 'if-none-match': etag } })).statusCode, 304)
        await patch(post.id, { title: 'changed' })
        assert.equal(String((await get(`/posts/${post.id}/revisions/1`)).headers.etag), etag, 'a revision never changes')
        assert.notEqual(String((await get(`/posts/${post.id}/revisions/2`)).headers.etag), etag)
      })

      it('restores a revision: the post takes its values, and a new revision is recorded', async () => {
        const post = json(await create({ title: 'good', content: 'kept', status: 'draft' }))
        await patch(post.id, { title: 'oops', content: 'lost', status: 'published' })
        const res = await t.request({ method: 'POST', url: `/posts/${post.id}/revisions/1/restore`, headers: alice })
        assert.equal(res.statusCode, 200)
        const restored = json(res)
        assert.deepEqual([restored.title, restored.content, restored.status], ['good', 'kept', 'draft'])
        assert.equal(res.headers.etag, (await get(`/posts/${post.id}`)).headers.etag)
        const revisions = json(await get(`/posts/${post.id}/revisions`))
        assert.deepEqual(revisions.map((r: { number: number, title: string }) => [r.number, r.title]), [[3, 'good'], [2, 'oops'], [1, 'good']])
        // A restore raises what a PUT would: published → draft is an update that unpublishes.
        assert.deepEqual((await eventsOf(post.id, 0)).slice(-2), ['post.updated', 'post.unpublished'])
        // `{}` is as good as no body.
        assert.equal((await t.request({ method: 'POST', url: `/posts/${post.id}/revisions/2/restore`, headers: alice, payload: {} })).statusCode, 200)
        assert.equal((await t.request({ method: 'POST', url: `/posts/${post.id}/revisions/2/restore`, headers: alice, payload: { title: 'x' } })).statusCode, 422)
      })

      it('restores the slug (taken back from the aliases), the tags and a given or derived excerpt', async () => {
        const post = json(await create({ title: 'Named', content: 'first words', slug: 'good-one', tags: ['A', 'b'], excerpt: 'custom' }))
        await patch(post.id, { slug: 'renamed', tags: ['c'], excerpt: null, content: 'other words' })
        let restored = json(await t.request({ method: 'POST', url: `/posts/${post.id}/revisions/1/restore`, headers: alice }))
        assert.deepEqual([restored.slug, restored.tags, restored.excerpt, restored.content], ['good-one', ['A', 'b'], 'custom', 'first words'])
        assert.equal((await get('/posts/by-slug/good-one')).statusCode, 200)
        restored = json(await t.request({ method: 'POST', url: `/posts/${post.id}/revisions/2/restore`, headers: alice }))
        assert.deepEqual([restored.slug, restored.tags, restored.excerpt], ['renamed', ['c'], 'other words'], 'a derived excerpt follows the restored content')
        const revision = json(await get(`/posts/${post.id}/revisions/2`))
        assert.deepEqual([revision.slug, revision.tags, revision.excerpt], ['renamed', ['c'], 'other words'])
      })

      it('checks If-Match and If-Unmodified-Since against the post: 412, nothing changed', async () => {
        const post = await create({ title: 'a', content: '' })
        const { id } = json(post)
        const stale = String(post.headers.etag)
        await patch(id, { title: 'b' })
        let res = await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers: { ...alice, 'if-match': stale } })
        assert.equal(res.statusCode, 412)
        assert.equal(json(res).code, 'PRECONDITION_FAILED')
        res = await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers: { ...alice, 'if-unmodified-since': 'Sat, 01 Jan 2000 00:00:00 GMT' } })
        assert.equal(res.statusCode, 412)
        assert.equal(json(await get(`/posts/${id}`)).title, 'b')
        assert.equal(json(await get(`/posts/${id}/revisions`)).length, 2, 'a refused restore records nothing')
        const current = String((await get(`/posts/${id}`)).headers.etag)
        res = await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers: { ...alice, 'if-match': current } })
        assert.equal(res.statusCode, 200)
        assert.equal(json(res).title, 'a')
      })

      it('honours an Idempotency-Key: the same answer again, nothing restored twice', async () => {
        const { id } = json(await create({ title: 'a', content: '' }))
        await patch(id, { title: 'b' })
        const headers = { ...alice, 'idempotency-key': `restore-${id}` }
        const first = await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers })
        const again = await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers })
        assert.equal(first.statusCode, 200)
        assert.equal(again.body, first.body)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(json(await get(`/posts/${id}/revisions`)).length, 3)
      })

      it('answers 404 REVISION_NOT_FOUND for a number never made, and POST_NOT_FOUND for a post that is not there', async () => {
        const { id } = json(await create({ title: 'a', content: '' }))
        for (const [method, url] of [['GET', `/posts/${id}/revisions/2`], ['POST', `/posts/${id}/revisions/2/restore`]] as const) {
          const res = await t.request({ method, url, headers: alice })
          assert.equal(res.statusCode, 404, url)
          assert.equal(json(res).code, 'REVISION_NOT_FOUND', url)
        }
        const res = await get('/posts/999999/revisions')
        assert.equal(res.statusCode, 404)
        assert.equal(json(res).code, 'POST_NOT_FOUND')
        assert.equal((await get(`/posts/${id}/revisions/0`)).statusCode, 422)
      })

      it('shows revisions to the author and admins only; to anyone else they do not exist', async () => {
        const { id } = json(await create({ title: 'public', content: '' }))
        assert.equal((await get(`/posts/${id}/revisions`, admin)).statusCode, 200)
        assert.equal((await get(`/posts/${id}/revisions/1`, admin)).statusCode, 200)
        for (const headers of [bob, {}]) {
          for (const url of [`/posts/${id}/revisions`, `/posts/${id}/revisions/1`]) {
            const res = await get(url, headers)
            assert.equal(res.statusCode, 404, url)
            assert.equal(json(res).code, 'REVISION_NOT_FOUND')
          }
        }
        assert.equal((await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers: bob })).statusCode, 404)
        assert.equal((await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore`, headers: admin })).statusCode, 200)
        assert.equal((await t.request({ method: 'POST', url: `/posts/${id}/revisions/1/restore` })).statusCode, 401)
      })

      it('deletes a post\'s revisions with it', async () => {
        const { id } = json(await create({ title: 'gone', content: '' }))
        await patch(id, { title: 'soon' })
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${id}`, headers: alice })).statusCode, 204)
        assert.equal((await get(`/posts/${id}/revisions`, admin)).statusCode, 404)
        const left = await t.store.revisions.list(id, { filter: {}, sort: [{ key: 'number', direction: 'desc' }], limit: 10, count: true })
        assert.equal(left.total, 0)
      })
    })
  })

  describe(`REVISIONS_KEEP [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind, { REVISIONS_KEEP: '3' }) })

    it('keeps the newest N revisions; a pruned one is 404 REVISION_NOT_FOUND, to read and to restore', async () => {
      const alice = await t.auth('alice')
      const { id } = (await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'r1', content: '' } })).json()
      const patchTitle = async (title: string) => await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ title }) })
      await patchTitle('r2')
      await patchTitle('r3')
      const numbers = async () => json(await t.request({ method: 'GET', url: `/posts/${id}/revisions`, headers: alice })).map((r: { number: number }) => r.number)
      assert.deepEqual(await numbers(), [3, 2, 1], 'at the limit, nothing is pruned')
      await patchTitle('r4')
      assert.deepEqual(await numbers(), [4, 3, 2], 'one over, the oldest goes')
      for (const [method, url] of [['GET', `/posts/${id}/revisions/1`], ['POST', `/posts/${id}/revisions/1/restore`]] as const) {
        const res = await t.request({ method, url, headers: alice })
        assert.equal(res.statusCode, 404)
        assert.equal(json(res).code, 'REVISION_NOT_FOUND')
      }
      assert.equal((await t.request({ method: 'POST', url: `/posts/${id}/revisions/2/restore`, headers: alice })).statusCode, 200)
      assert.deepEqual(await numbers(), [5, 4, 3])
    })
  })
}
