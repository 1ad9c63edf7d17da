import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

for (const kind of await storeKinds()) {
  describe(`conditional requests and caching [${kind}]`, () => {
    let t: TestApp
    let alice: { authorization: string }
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice')
    })

    async function create (body: object = { title: 'T', content: 'C' }) {
      return json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: body }))
    }
    const get = (url: string, headers: Record<string, string> = {}) => t.request({ method: 'GET', url, headers })

    describe('ETag and Last-Modified on a post', () => {
      it('sends a strong ETag and Last-Modified from updated_at', async () => {
        const p = await create()
        const res = await get(`/posts/${p.id}`)
        assert.match(String(res.headers.etag), /^"[^"]+"$/)
        assert.equal(res.headers['last-modified'], new Date(p.updated_at).toUTCString())
      })

      it('answers 304 with the ETag and no body when If-None-Match matches (weak comparison, lists, *)', async () => {
        const p = await create()
        const etag = String((await get(`/posts/${p.id}`)).headers.etag)
        for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
          const res = await get(`/posts/${p.id}`, { 'if-none-match': inm })
          assert.equal(res.statusCode, 304, inm)
          assert.equal(res.body, '')
          assert.equal(res.headers.etag, etag)
        }
        assert.equal((await get(`/posts/${p.id}`, { 'if-none-match': '"other"' })).statusCode, 200)
      })

      it('answers 304 to HEAD too, and HEAD 200 carries the headers without a body', async () => {
        const p = await create()
        const full = await get(`/posts/${p.id}`)
        const head = await t.request({ method: 'HEAD', url: `/posts/${p.id}` })
        assert.equal(head.statusCode, 200)
        assert.equal(head.body, '')
        assert.equal(head.headers.etag, full.headers.etag)
        const head304 = await t.request({ method: 'HEAD', url: `/posts/${p.id}`, headers: { 'if-none-match': String(full.headers.etag) } })
        assert.equal(head304.statusCode, 304)
      })

      it('uses If-Modified-Since only without If-None-Match', async () => {
        const p = await create()
        const lm = String((await get(`/posts/${p.id}`)).headers['last-modified'])
        assert.equal((await get(`/posts/${p.id}`, { 'if-modified-since': lm })).statusCode, 304)
        assert.equal((await get(`/posts/${p.id}`, { 'if-modified-since': new Date(Date.parse(lm) - 60_000).toUTCString() })).statusCode, 200)
        // If-None-Match wins: a mismatching tag beats a current date.
        assert.equal((await get(`/posts/${p.id}`, { 'if-none-match': '"old"', 'if-modified-since': new Date(Date.now() + 3600_000).toUTCString() })).statusCode, 200)
        assert.equal((await get(`/posts/${p.id}`, { 'if-modified-since': 'not a date' })).statusCode, 200)
        // Only HTTP-dates count (RFC 9110 §5.6.7); an ISO 8601 date is ignored.
        assert.equal((await get(`/posts/${p.id}`, { 'if-modified-since': '2099-01-01T00:00:00Z' })).statusCode, 200)
        assert.equal((await get(`/posts/${p.id}`, { 'if-modified-since': 'Mon, 31 Nov 2099 08:13:16 GMT' })).statusCode, 200, 'a day that does not exist')
        assert.equal((await get(`/posts/${p.id}`, { 'if-modified-since': 'Friday, 01-Jan-49 00:00:00 GMT' })).statusCode, 304, 'RFC 850 form')
      })

      it('changes the ETag with every change and with the version', async () => {
        const p = await create()
        const before = String((await get(`/posts/${p.id}`)).headers.etag)
        const v2 = String((await get(`/v2/posts/${p.id}`)).headers.etag)
        assert.notEqual(v2, before)
        await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { title: 'T', content: 'C' } })
        const after = String((await get(`/posts/${p.id}`)).headers.etag)
        assert.notEqual(after, before)
        assert.equal((await get(`/posts/${p.id}`, { 'if-none-match': before })).statusCode, 200)
      })

      it('gives every revision its own ETag, one per version and link base, and the same tag to the same revision', async () => {
        const p = await create()
        const seen = new Set<string>()
        for (let revision = 1; revision <= 3; revision++) {
          const tags = [
            String((await get(`/posts/${p.id}`)).headers.etag),
            String((await get(`/posts/${p.id}`, { accept: 'application/vnd.blog.v2+json' })).headers.etag),
            String((await get(`/v1/posts/${p.id}`)).headers.etag),
            String((await get(`/v2/posts/${p.id}`)).headers.etag),
          ]
          // RFC 9110 §8.8.3: a strong tag of etagc characters.
          for (const tag of tags) assert.match(tag, /^"[\x21\x23-\x7e]+"$/)
          assert.equal(String((await get(`/posts/${p.id}`)).headers.etag), tags[0], 'the same revision read again')
          for (const tag of tags) {
            assert.ok(!seen.has(tag), `${tag} was sent for another revision or representation`)
            seen.add(tag)
          }
          await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { title: `T${revision}`, content: 'C' } })
        }
        assert.equal(seen.size, 12)
      })
    })

    describe('lists', () => {
      it('send a weak ETag and answer 304 until the list changes', async () => {
        await create()
        const first = await get('/posts')
        assert.match(String(first.headers.etag), /^W\/"/)
        assert.equal((await get('/posts', { 'if-none-match': String(first.headers.etag) })).statusCode, 304)
        await create({ title: 'newer', content: '' })
        const changed = await get('/posts', { 'if-none-match': String(first.headers.etag) })
        assert.equal(changed.statusCode, 200)
        assert.notEqual(changed.headers.etag, first.headers.etag)
      })
    })

    describe('If-Match and If-Unmodified-Since on writes', () => {
      it('answer 412 PRECONDITION_FAILED for a stale ETag and change nothing', async () => {
        const p = await create()
        const res = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': '"stale"' }, payload: { title: 'changed', content: '' } })
        assert.equal(res.statusCode, 412)
        assert.equal(json(res).code, 'PRECONDITION_FAILED')
        assert.equal(json(await get(`/posts/${p.id}`)).title, 'T')
        const del = await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': '"stale"' } })
        assert.equal(del.statusCode, 412)
        assert.equal((await get(`/posts/${p.id}`)).statusCode, 200)
      })

      it('go ahead with the current ETag or *', async () => {
        const p = await create()
        const etag = String((await get(`/posts/${p.id}`)).headers.etag)
        const res = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': etag }, payload: { title: 'v2', content: '' } })
        assert.equal(res.statusCode, 200)
        assert.equal((await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': etag }, payload: { title: 'v3', content: '' } })).statusCode, 412, 'the old tag is stale now')
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': '*' } })).statusCode, 204)
      })

      it('never match a weak tag (strong comparison)', async () => {
        const p = await create()
        const etag = String((await get(`/posts/${p.id}`)).headers.etag)
        const res = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': `W/${etag}` }, payload: { title: 'x', content: '' } })
        assert.equal(res.statusCode, 412)
      })

      it('compare If-Unmodified-Since with Last-Modified', async () => {
        const p = await create()
        const lm = String((await get(`/posts/${p.id}`)).headers['last-modified'])
        const old = new Date(Date.parse(lm) - 60_000).toUTCString()
        assert.equal((await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-unmodified-since': old }, payload: { title: 'x', content: '' } })).statusCode, 412)
        assert.equal((await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-unmodified-since': new Date(Date.now() + 60_000).toUTCString() }, payload: { title: 'x', content: '' } })).statusCode, 200)
        // An invalid date is ignored (RFC 9110 §13.1.4): the write goes ahead.
        assert.equal((await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-unmodified-since': 'garbage' }, payload: { title: 'y', content: '' } })).statusCode, 200)
      })

      it('let exactly one of two racing writers with the same If-Match win', async () => {
        for (let round = 0; round < 5; round++) {
          const p = await create()
          const etag = String((await get(`/posts/${p.id}`)).headers.etag)
          const put = (title: string) => t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: { ...alice, 'if-match': etag }, payload: { title, content: '' } })
          const results = await Promise.all([put('A'), put('B'), put('C')])
          const codes = results.map(r => r.statusCode).sort()
          assert.deepEqual(codes, [200, 412, 412])
          const winner = json(results.find(r => r.statusCode === 200)!)
          assert.equal(json(await get(`/posts/${p.id}`)).title, winner.title)
        }
      })
    })

    describe('Cache-Control and Vary', () => {
      it('lets anyone cache published posts and their lists read anonymously', async () => {
        const p = await create()
        for (const url of [`/posts/${p.id}`, '/posts']) {
          const res = await get(url)
          assert.equal(res.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300', url)
          assert.match(String(res.headers.vary), /Accept/)
          assert.match(String(res.headers.vary), /Authorization/)
        }
      })

      it('forbids storing anything read with credentials, drafts and errors', async () => {
        const p = await create({ title: 'd', content: '', status: 'draft' })
        assert.equal((await get(`/posts/${p.id}`, alice)).headers['cache-control'], 'private, no-store')
        assert.equal((await get('/posts', alice)).headers['cache-control'], 'private, no-store')
        const err = await get('/posts/424242')
        assert.equal(err.headers['cache-control'], 'no-store')
        assert.equal(err.headers.etag, undefined)
      })
    })
  })
}
