import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../../helper.ts'
import { before } from '../../../support/hooks.ts'

type Headers = Record<string, string>
const SITE = 'https://read.example.com'

for (const kind of await storeKinds()) {
  describe(`posts' public URLs with the reading site on [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    before(async () => {
      // The site's listener is not started by a test app: only its URLs are in the settings.
      t = await buildTestApp(kind, { PUBLIC_BASE_URL: 'https://api.example.com', SITE_PORT: '3999', SITE_BASE_URL: `${SITE}/` })
      alice = await t.auth('alice', ['posts:write'])
    })

    const create = async (body: object) => json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { content: 'Hello', ...body } }))

    it('names the site\'s /{slug} and /author/{slug} in the feeds and the sitemap, the API\'s paths nowhere', async () => {
      await t.store.transaction(async uow => { await uow.identity.insertUser({ id: randomBytes(16).toString('base64url'), email: null, name: 'Ada', slug: 'ada', role: 'author', status: 'inactive', passwordHash: null }, new Date()) })
      const post = json(await t.request({ method: 'POST', url: '/posts', headers: await t.auth('root', ['admin']), payload: { title: 'On the site', content: 'Hello', status: 'published', authors: ['ada'] } }))
      const atom = (await t.request({ method: 'GET', url: '/feed.atom' })).body
      assert.ok(atom.includes(`href="${SITE}/${post.slug}"`), atom)
      const feed = json(await t.request({ method: 'GET', url: '/feed.json' }))
      assert.equal(feed.home_page_url, `${SITE}/`)
      assert.equal(feed.items[0].url, `${SITE}/${post.slug}`)
      assert.deepEqual(feed.items[0].authors, [{ name: 'Ada', url: `${SITE}/author/ada` }])
      const sitemap = (await t.request({ method: 'GET', url: '/sitemap.xml' })).body
      assert.ok(sitemap.includes(`<loc>${SITE}/${post.slug}</loc>`), sitemap)
      assert.ok(!atom.includes('/posts/by-slug/') && !sitemap.includes('/posts/by-slug/'))
    })

    it('gives a preview link the site\'s /p/{token}, and a published post\'s link 308s to the site\'s page', async () => {
      const post = await create({ title: 'Previewed', status: 'draft' })
      const link = json(await t.request({ method: 'POST', url: `/posts/${post.id}/preview-links`, headers: alice }))
      assert.equal(link.url, `${SITE}/p/${link.token}`)
      await t.request({ method: 'PATCH', url: `/posts/${post.id}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ status: 'published' }) })
      const moved = await t.request({ method: 'GET', url: `/preview/${link.token}` })
      assert.equal(moved.statusCode, 308)
      assert.equal(moved.headers.location, `${SITE}/${post.slug}`)
    })
  })
}
