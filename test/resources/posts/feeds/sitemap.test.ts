import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { gunzipSync } from 'node:zlib'
import { describe, it } from 'node:test'
import { parseSitemap, parseSitemapIndex } from 'sitemap'
import { buildTestApp, json, storeKinds, type TestApp } from '../../../helper.ts'
import { createPost } from '../../../support/posts.ts'
import { before } from '../../../support/hooks.ts'

type Headers = Record<string, string>
const BASE = 'https://blog.example.com'

/** What a real client (the `sitemap` package's parser) reads from a urlset. */
async function urlsOf (xml: string): Promise<{ url: string, lastmod?: string, img: { url: string }[] }[]> {
  return await parseSitemap(Readable.from([xml]))
}

async function partsOf (xml: string): Promise<string[]> {
  return (await parseSitemapIndex(Readable.from([xml]))).map(s => s.url)
}

for (const kind of await storeKinds()) {
  describe(`GET /sitemap.xml [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    before(async () => {
      t = await buildTestApp(kind, { PUBLIC_BASE_URL: BASE })
      alice = await t.auth('alice', ['posts:write'])
    })

    const create = async (body: object) => json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { content: '', ...body } }))
    const sitemap = async (headers: Headers = {}) => await t.request({ method: 'GET', url: '/sitemap.xml', headers })

    it('is an empty urlset before anything is published, linked from the API index', async () => {
      const res = await sitemap()
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['content-type'], 'application/xml; charset=utf-8')
      assert.match(res.body, /<urlset xmlns="http:\/\/www\.sitemaps\.org\/schemas\/sitemap\/0\.9" xmlns:image="http:\/\/www\.google\.com\/schemas\/sitemap-image\/1\.1">/)
      assert.deepEqual(await urlsOf(res.body), [])
      assert.equal(json(await t.request({ method: 'GET', url: '/' }))._links.sitemap.href, '/sitemap.xml')
    })

    it('lists every published post with its public URL and updated_at, not drafts; a real parser reads it', async () => {
      const published = await create({ title: 'Hello', slug: 'hello' })
      await create({ title: 'Secret', status: 'draft' })
      const res = await sitemap()
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['cache-control'], 'public, max-age=300')
      assert.match(String(res.headers.etag), /^"/)
      assert.deepEqual((await urlsOf(res.body)).map(({ url, lastmod }) => ({ url, lastmod })), [{ url: `${BASE}/posts/by-slug/hello`, lastmod: published.updated_at }])
      // The version prefixes serve the same document.
      assert.equal((await t.request({ method: 'GET', url: '/v2/sitemap.xml' })).body, res.body)
      // Credentials change nothing.
      assert.equal((await sitemap(alice)).body, res.body)
      const head = await t.request({ method: 'HEAD', url: '/sitemap.xml' })
      assert.equal(head.statusCode, 200)
      assert.equal(head.body, '')
      assert.equal(head.headers.etag, res.headers.etag)
      const gzipped = await t.request({ method: 'GET', url: '/sitemap.xml', headers: { 'accept-encoding': 'gzip' } })
      assert.equal(gzipped.headers['content-encoding'], 'gzip')
      assert.equal(gunzipSync(gzipped.rawPayload).toString(), res.body)
    })

    it('gives a post with a feature image an image entry holding the image\'s absolute URL', async () => {
      const { png } = await import('../../media/images.ts')
      const upload = await t.request({ method: 'POST', url: '/media', headers: { ...alice, 'content-type': 'image/png' }, payload: await png(400, 300) })
      assert.equal(upload.statusCode, 201, upload.body)
      const media = json<{ id: string }>(upload)
      const post = await create({ title: 'Pictured', slug: 'pictured', feature_image: media.id })
      const entry = (await urlsOf((await sitemap()).body)).find(u => u.url === `${BASE}/posts/by-slug/pictured`)
      assert.ok(entry !== undefined)
      assert.deepEqual(entry.img.map(i => i.url), [`${BASE}${post.feature_image.url as string}`])
      assert.match(entry.img[0]!.url, new RegExp(`/media/${media.id}/image(\\?|$)`))
      const plain = (await urlsOf((await sitemap()).body)).find(u => u.url === `${BASE}/posts/by-slug/hello`)
      assert.deepEqual(plain?.img, [], 'a post without one has no image entry')
    })

    it('answers 304 to its ETag, and changes the ETag with a publication, an edit, an unpublishing and a deletion', async () => {
      const post = await create({ title: 'Moving', slug: 'moving' })
      const first = await sitemap()
      const etag = String(first.headers.etag)
      const again = await sitemap({ 'if-none-match': etag })
      assert.equal(again.statusCode, 304)
      assert.equal(again.body, '')
      assert.equal(again.headers.etag, etag)
      assert.equal(again.headers['cache-control'], 'public, max-age=300')
      let last = etag
      const changed = async (what: string) => {
        const tag = String((await sitemap()).headers.etag)
        assert.notEqual(tag, last, `${what} changes the ETag`)
        assert.equal((await sitemap({ 'if-none-match': last })).statusCode, 200, `${what}: the old copy is stale`)
        last = tag
        return tag
      }
      await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { title: 'Moved', content: '', slug: 'moved' } })
      await changed('an edit')
      await create({ title: 'New' })
      await changed('a publication')
      await t.request({ method: 'PATCH', url: `/posts/${post.id}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ status: 'draft' }) })
      await changed('an unpublishing')
      assert.ok(!(await urlsOf((await sitemap()).body)).some(u => u.url.endsWith('/moved')))
      const gone = await create({ title: 'Gone soon' })
      await changed('another publication')
      await t.request({ method: 'DELETE', url: `/posts/${gone.id}`, headers: alice })
      await changed('a deletion')
      // A draft changes nothing a sitemap shows: the same ETag.
      const before = String((await sitemap()).headers.etag)
      await create({ title: 'Draft only', status: 'draft' })
      assert.equal(String((await sitemap()).headers.etag), before)
    })

    it('has no parts while it lists every post itself', async () => {
      const res = await t.request({ method: 'GET', url: '/sitemap-posts-1.xml' })
      assert.equal(res.statusCode, 404)
      assert.equal((await t.request({ method: 'GET', url: '/sitemap-posts-0.xml' })).statusCode, 422)
    })

    it('reads the posts from the store page by page: every one of 1 005, in id order', async () => {
      const now = new Date()
      for (let i = 0; i < 1005; i++) await createPost(t.store, { title: `Bulk ${i}`, slug: `bulk-${i}` }, { now })
      const urls = (await urlsOf((await sitemap()).body)).map(u => u.url)
      const bulk = urls.filter(u => u.includes('/bulk-'))
      assert.equal(bulk.length, 1005)
      assert.deepEqual(bulk, Array.from({ length: 1005 }, (_, i) => `${BASE}/posts/by-slug/bulk-${i}`))
      assert.equal(new Set(urls).size, urls.length)
    })
  })

  describe(`the sitemap index past SITEMAP_URLS_PER_FILE posts [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    before(async () => {
      t = await buildTestApp(kind, { PUBLIC_BASE_URL: BASE, SITEMAP_URLS_PER_FILE: '3' })
      alice = await t.auth('alice', ['posts:write'])
    })

    const create = async (body: object) => json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { content: '', ...body } }))

    it('is a urlset at exactly the limit and an index of parts one post past it; the parts hold every post once', async () => {
      for (let i = 1; i <= 3; i++) await create({ title: `P${i}`, slug: `p${i}` })
      await create({ title: 'Hidden', status: 'draft' })
      const atLimit = await t.request({ method: 'GET', url: '/sitemap.xml' })
      assert.equal((await urlsOf(atLimit.body)).length, 3)
      for (let i = 4; i <= 7; i++) await create({ title: `P${i}`, slug: `p${i}` })
      const index = await t.request({ method: 'GET', url: '/sitemap.xml' })
      assert.equal(index.statusCode, 200)
      assert.match(index.body, /<sitemapindex xmlns="http:\/\/www\.sitemaps\.org\/schemas\/sitemap\/0\.9">/)
      const parts = await partsOf(index.body)
      assert.deepEqual(parts, [1, 2, 3].map(n => `${BASE}/sitemap-posts-${n}.xml`))
      const listed: string[] = []
      for (const [i, part] of parts.entries()) {
        const res = await t.request({ method: 'GET', url: new URL(part).pathname })
        assert.equal(res.statusCode, 200, part)
        assert.equal(res.headers['cache-control'], 'public, max-age=300')
        assert.equal((await t.request({ method: 'GET', url: new URL(part).pathname, headers: { 'if-none-match': String(res.headers.etag) } })).statusCode, 304)
        assert.notEqual(res.headers.etag, index.headers.etag)
        const urls = (await urlsOf(res.body)).map(u => u.url)
        assert.equal(urls.length, i < 2 ? 3 : 1, part)
        listed.push(...urls)
      }
      assert.deepEqual(listed, [1, 2, 3, 4, 5, 6, 7].map(n => `${BASE}/posts/by-slug/p${n}`))
      const past = await t.request({ method: 'GET', url: '/sitemap-posts-4.xml' })
      assert.equal(past.statusCode, 404)
      assert.equal((await t.request({ method: 'GET', url: '/sitemap-posts-x.xml' })).statusCode, 422)
    })
  })
}
