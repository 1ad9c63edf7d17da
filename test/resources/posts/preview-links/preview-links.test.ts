import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import type { KyselyStore } from '../../../../src/store/kysely-store.ts'
import { bearer, buildTestApp, json, postgresAvailable, storeKinds, type TestApp, twoInstances } from '../../../helper.ts'
import { until } from '../../../support/poll.ts'
import { before } from '../../../support/hooks.ts'

type Headers = Record<string, string>

function assertPreviewHeaders (res: { headers: Record<string, unknown> }, what: string): void {
  // Errors are `no-store` as every error is; answers `private, no-store`.
  assert.match(String(res.headers['cache-control']), /^(private, )?no-store$/, what)
  assert.equal(res.headers['x-robots-tag'], 'noindex, nofollow', what)
  assert.equal(res.headers['referrer-policy'], 'no-referrer', what)
}

for (const kind of await storeKinds()) {
  describe(`preview links [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    let bob: Headers
    let admin: Headers
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice', ['posts:write'])
      bob = await t.auth('bob', ['posts:write'])
      admin = await t.auth('root', ['admin'])
    })

    const create = async (body: object = {}) => json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Draft', content: 'Hello *world*', status: 'draft', ...body } }))
    const link = async (postId: number, body?: object, headers: Headers = alice) =>
      await t.request({ method: 'POST', url: `/posts/${postId}/preview-links`, headers, ...(body === undefined ? {} : { payload: body }) })
    // Each read of a preview counts against its token: the tests read each token a few times at most.
    const preview = async (url: string, headers: Headers = {}) => await t.request({ method: 'GET', url, headers })
    const dead = async (url: string, what: string) => {
      const res = await preview(url)
      assert.equal(res.statusCode, 404, what)
      assert.equal(json(res).code, 'PREVIEW_NOT_FOUND', what)
      assertPreviewHeaders(res, what)
    }

    it('makes a link with a 256-bit token shown once, stores only its hash, and lists it without the token', async () => {
      const post = await create()
      const res = await link(post.id)
      assert.equal(res.statusCode, 201)
      const body = json(res)
      assert.deepEqual(Object.keys(body).sort(), ['created_at', 'expires_at', 'id', 'revision', 'token', 'url'])
      assert.match(body.token, /^[A-Za-z0-9_-]{43}$/)
      assert.ok(Buffer.from(body.token, 'base64url').length * 8 >= 128)
      assert.equal(body.url, `/preview/${body.token}`)
      assert.equal(body.revision, null)
      assert.equal(Date.parse(body.expires_at) - Date.parse(body.created_at), 604_800_000)
      assert.equal(res.headers.location, `/posts/${post.id}/preview-links/${body.id}`)
      assert.equal(res.headers['cache-control'], 'private, no-store')
      const rows = await (t.store as KyselyStore).db.selectFrom('post_preview_links').selectAll().where('id', '=', body.id).execute()
      assert.equal(rows.length, 1)
      assert.equal(rows[0]!.token_hash, createHash('sha256').update(body.token).digest('hex'))
      assert.ok(!JSON.stringify(rows).includes(body.token), 'the token itself is nowhere in the row')
      const list = await t.request({ method: 'GET', url: `/posts/${post.id}/preview-links`, headers: alice })
      assert.equal(list.statusCode, 200)
      assert.deepEqual(json(list), [{ id: body.id, expires_at: body.expires_at, revision: null, created_at: body.created_at }])
      // A second link is another token.
      assert.notEqual(json(await link(post.id)).token, body.token)
    })

    it('honours Idempotency-Key: a retry answers the same link and makes no second one', async () => {
      const post = await create()
      const headers = { ...alice, 'idempotency-key': `link-${post.id}` }
      const first = await t.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers, payload: { expires_in: 3600 } })
      const again = await t.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers, payload: { expires_in: 3600 } })
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
      assert.equal(json(await t.request({ method: 'GET', url: `/posts/${post.id}/preview-links`, headers: alice })).length, 1)
      assert.equal((await t.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers, payload: { expires_in: 60 } })).statusCode, 422)
    })

    it('takes expires_in 60 and 2 592 000, refuses 59 and 2 592 001, and a revision the post does not have', async () => {
      const post = await create()
      for (const ok of [60, 2_592_000]) {
        const res = await link(post.id, { expires_in: ok })
        assert.equal(res.statusCode, 201, String(ok))
        assert.equal(Date.parse(json(res).expires_at) - Date.parse(json(res).created_at), ok * 1000)
      }
      for (const bad of [59, 2_592_001, 0, -1, 1.5, '600']) {
        const res = await link(post.id, { expires_in: bad })
        assert.equal(res.statusCode, 422, String(bad))
        assert.equal(json(res).errors[0].field, 'expires_in', String(bad))
      }
      const res = await link(post.id, { revision: 2 })
      assert.equal(res.statusCode, 422)
      assert.deepEqual(json(res).errors.map((e: { field: string }) => e.field), ['revision'])
      assert.equal((await link(post.id, { nope: 1 })).statusCode, 422)
    })

    it('lets only the author or an admin manage links: others 403 (published) or 404 (draft), anonymous 401', async () => {
      const draft = await create()
      const published = await create({ status: 'published' })
      assert.equal((await link(draft.id, {}, bob)).statusCode, 404)
      assert.equal((await link(published.id, {}, bob)).statusCode, 403)
      assert.equal((await t.request({ method: 'GET', url: `/posts/${published.id}/preview-links`, headers: bob })).statusCode, 403)
      assert.equal((await t.request({ method: 'POST', url: `/posts/${draft.id}/preview-links` })).statusCode, 401)
      assert.equal((await t.request({ method: 'GET', url: `/posts/${draft.id}/preview-links` })).statusCode, 401)
      const made = await link(draft.id, {}, admin)
      assert.equal(made.statusCode, 201)
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${draft.id}/preview-links/${json(made).id}`, headers: bob })).statusCode, 404)
      const stale = await t.request({ method: 'DELETE', url: `/posts/${draft.id}/preview-links/${json(made).id}`, headers: { ...admin, 'if-match': '"stale"' } })
      assert.equal(stale.statusCode, 412)
      assert.equal((await preview(json(made).url)).statusCode, 200, 'a refused revocation changes nothing')
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${draft.id}/preview-links/${json(made).id}`, headers: admin })).statusCode, 204)
      assert.equal((await link(999_999)).statusCode, 404)
    })

    it('shows the post, any status, as its author sees it, to anyone holding the link; Authorization is ignored', async () => {
      for (const status of ['draft', 'archived']) {
        const post = await create({ status, meta_title: 'Meta' })
        const { url } = json(await link(post.id))
        const res = await preview(url)
        assert.equal(res.statusCode, 200, status)
        assertPreviewHeaders(res, status)
        const authorView = json(await t.request({ method: 'GET', url: `/posts/${post.id}`, headers: alice }))
        assert.deepEqual(json(res), authorView)
        assert.equal(res.headers.etag, (await t.request({ method: 'GET', url: `/posts/${post.id}`, headers: alice })).headers.etag)
        // A bad credential and a good one alike: the link decides, never the header.
        const withBad = await preview(url, { authorization: 'Bearer not-a-token' })
        assert.equal(withBad.statusCode, 200)
        assert.deepEqual(json(withBad), authorView)
        const withBob = await preview(url, bob)
        assert.equal(withBob.statusCode, 200)
      }
      const post = await create({ status: 'scheduled', publish_at: new Date(Date.now() + 3_600_000).toISOString() })
      const v2 = await preview(`/v2${json(await link(post.id)).url}`)
      assert.equal(v2.statusCode, 200)
      assert.equal(json(v2).postId, post.id)
      assert.equal(json(v2).status, 'scheduled')
    })

    it('answers 304 to If-None-Match with the headers', async () => {
      const post = await create()
      const { url } = json(await link(post.id))
      const first = await preview(url)
      const again = await preview(url, { 'if-none-match': String(first.headers.etag) })
      assert.equal(again.statusCode, 304)
      assertPreviewHeaders(again, '304')
    })

    it('redirects a link not pinned with 308 to the public URL once the post is published; a pinned one keeps its revision', async () => {
      const post = await create({ title: 'First words', content: 'Draft **one**', excerpt: null, meta_description: 'one' })
      const loose = json(await link(post.id))
      const pinned = json(await link(post.id, { revision: 1 }))
      assert.equal(pinned.revision, 1)
      const published = json(await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { title: 'Final words', content: 'Final *two*', slug: 'final-words', status: 'published' } }))
      const moved = await preview(loose.url)
      assert.equal(moved.statusCode, 308)
      assert.equal(moved.headers.location, '/posts/by-slug/final-words')
      assertPreviewHeaders(moved, '308')
      assert.equal((await preview(`/v2${loose.url}`)).headers.location, '/v2/posts/by-slug/final-words')
      const shown = await preview(pinned.url)
      assert.equal(shown.statusCode, 200)
      const body = json(shown)
      assert.equal(body.title, 'First words')
      assert.equal(body.content, 'Draft **one**')
      assert.equal(body.content_html, '<p>Draft <strong>one</strong></p>\n')
      assert.equal(body.excerpt, 'Draft one')
      assert.equal(body.status, 'draft')
      assert.equal(body.slug, post.slug)
      assert.equal(body.meta_description, 'one')
      assert.equal(body.updated_at, published.updated_at, 'over the post as it now is')
    })

    it('answers 404 PREVIEW_NOT_FOUND for every dead token: unknown, truncated, padded, expired, revoked, post deleted, revision pruned', async () => {
      const post = await create()
      const live = json(await link(post.id))
      await dead('/preview/' + 'A'.repeat(43), 'unknown')
      await dead('/preview/x', 'short')
      await dead(`/preview/${live.token.slice(0, -1)}`, 'truncated')
      await dead(`/preview/${live.token}A`, 'padded')
      await dead(`/preview/${live.token.toLowerCase() === live.token ? live.token.toUpperCase() : live.token.toLowerCase()}`, 'case changed')
      await dead(`/preview/${encodeURIComponent(' ' + live.token)}`, 'space before')
      await dead(`/preview/${'z'.repeat(150)}`, 'long')
      assert.equal((await preview(live.url)).statusCode, 200, 'the real one still works')

      const expiring = json(await link(post.id, { expires_in: 60 }))
      await (t.store as KyselyStore).db.updateTable('post_preview_links').set({ expires_at: new Date(Date.now() - 1000).toISOString() as never }).where('id', '=', expiring.id).execute()
      await dead(expiring.url, 'expired')
      assert.ok(!json(await t.request({ method: 'GET', url: `/posts/${post.id}/preview-links`, headers: alice })).some((l: { id: number }) => l.id === expiring.id), 'expired: not listed')

      const revoked = json(await link(post.id))
      const other = await create()
      assert.equal(json(await t.request({ method: 'DELETE', url: `/posts/${other.id}/preview-links/${revoked.id}`, headers: alice })).code, 'PREVIEW_NOT_FOUND', 'another post\'s link id')
      assert.equal((await preview(revoked.url)).statusCode, 200, 'not revoked through another post')
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${post.id}/preview-links/${revoked.id}`, headers: alice })).statusCode, 204)
      await dead(revoked.url, 'revoked')
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${post.id}/preview-links/${revoked.id}`, headers: alice })).statusCode, 404, 'revoked twice')

      const pinned = json(await link(post.id, { revision: 1 }))
      for (let i = 0; i < 3; i++) await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { title: `v${i}`, content: '', status: 'draft' } })
      await (t.store as KyselyStore).db.deleteFrom('post_revisions').where('post_id', '=', post.id).where('number', '=', 1).execute()
      await dead(pinned.url, 'pinned revision pruned')

      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${post.id}`, headers: alice })).statusCode, 204)
      await dead(live.url, 'post deleted')
    })

    it('takes as long for a made-up token as for a revoked one: a lookup of the hash, no comparison of tokens', async () => {
      const post = await create()
      const revoked = json(await link(post.id))
      await t.request({ method: 'DELETE', url: `/posts/${post.id}/preview-links/${revoked.id}`, headers: alice })
      const near = revoked.token.slice(0, -1) + (revoked.token.endsWith('A') ? 'B' : 'A')
      // The same code path for both: one hash, one index lookup, the same 404. Timed loosely (a busy machine).
      const time = async (url: string) => {
        const start = process.hrtime.bigint()
        await t.app.inject({ method: 'GET', url })
        return Number(process.hrtime.bigint() - start)
      }
      const a: number[] = []
      const b: number[] = []
      for (let i = 0; i < 4; i++) {
        a.push(await time(`/preview/${near}`))
        b.push(await time(`/preview/${'Q'.repeat(43)}`))
      }
      const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
      assert.ok(median(a) < median(b) * 20 && median(b) < median(a) * 20, `near ${median(a)} ns, far ${median(b)} ns`)
    })

    it('rate limits preview answers by the token: one token used up, another still answers', async () => {
      const limited = await buildTestApp(kind, { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_S: '60' })
      const headers = await limited.auth('alice', ['posts:write'])
      const post = json(await limited.request({ method: 'POST', url: '/posts', headers, payload: { title: 'x', content: '', status: 'draft' } }))
      const one = json(await limited.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers }))
      const two = json(await limited.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers }))
      const statuses: number[] = []
      for (let i = 0; i < 6; i++) statuses.push((await limited.request({ method: 'GET', url: one.url })).statusCode)
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429])
      const res = await limited.request({ method: 'GET', url: one.url })
      assert.equal(res.statusCode, 429)
      assert.ok(res.headers['retry-after'] !== undefined)
      // The same client, another token: counted apart (and apart from the author's own requests).
      const other = await limited.request({ method: 'GET', url: two.url })
      assert.equal(other.statusCode, 200)
      assert.match(String(other.headers.ratelimit), /r=4/)
    })
  })
}

describe('preview links on two instances of one PostgreSQL', { skip: !(await postgresAvailable()) && 'PostgreSQL is unreachable' }, () => {
  it('a link revoked on one answers 404 on the other within a second', async c => {
    const { a, b } = await twoInstances(c, 'postgres')
    const authorization = await bearer('alice')
    const post = JSON.parse((await a.inject({ method: 'POST', url: '/posts', headers: { authorization }, payload: { title: 'x', content: '', status: 'draft' } })).body) as { id: number }
    const made = JSON.parse((await a.inject({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers: { authorization } })).body) as { id: number, url: string }
    // B has read it (and would have cached it, if it cached).
    for (let i = 0; i < 3; i++) assert.equal((await b.inject({ method: 'GET', url: made.url })).statusCode, 200)
    assert.equal((await a.inject({ method: 'DELETE', url: `/posts/${post.id}/preview-links/${made.id}`, headers: { authorization } })).statusCode, 204)
    await until(async () => (await b.inject({ method: 'GET', url: made.url })).statusCode === 404, 'B to answer 404 after the revocation on A', 1000)
    assert.equal((await a.inject({ method: 'GET', url: made.url })).statusCode, 404)
  })
})
