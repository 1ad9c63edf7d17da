import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { storeKinds } from '../helper.ts'
import { addImage, buildTestSite, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

const MERGE = 'application/merge-patch+json'

async function until (what: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  for (;;) {
    if (await what()) return true
    if (Date.now() > end) return false
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

for (const kind of await storeKinds()) {
  describe(`the page cache across instances (${kind})`, () => {
    let a: TestSite
    let b: TestSite
    let post: any
    before(async () => {
      a = await buildTestSite(kind)
      // B leaves the shared background work to A: two SQLite connections in one process would
      // otherwise wait on each other's writes (what two processes do concurrently).
      b = await buildTestSite(kind, { BACKGROUND_WORK: 'false' }, undefined, a.t.config.databaseUrl)
      post = await publish(a.t, { title: 'Before the change' })
    })

    it('shows a post edited on instance A on instance B\'s pages within a second', async () => {
      const path = `/${post.slug as string}`
      // The publishing's own events reach B within a poll and empty its cache once: until then a kept page may go.
      assert.ok(await until(async () => {
        assert.match(await (await b.get(path)).text(), /Before the change/)
        assert.match(await (await b.get('/')).text(), /Before the change/)
        return (b.site.cache?.count ?? 0) >= 2
      }, 3000), 'both pages are kept')
      await b.get('/')
      assert.match(await b.t.scrape(), /site_page_cache_reads_total\{result="hit"\} [1-9]/)
      const admin = await a.t.auth('ann', ['admin'])
      const res = await a.t.request({ method: 'PATCH', url: `/posts/${post.id as number}`, headers: { ...admin, 'content-type': MERGE }, payload: { title: 'After the change' } })
      assert.equal(res.statusCode, 200, res.body)
      const answered = Date.now()
      assert.ok(await until(async () => /After the change/.test(await (await b.get(path)).text()), 1000), 'the post page')
      assert.ok(Date.now() - answered <= 1000)
      assert.match(await (await b.get('/')).text(), /After the change/)
    })

    it('shows new site settings on instance B within a second', async () => {
      const admin = await a.t.auth('ann', ['admin'])
      assert.match(await (await b.get('/')).text(), /<title>Blog<\/title>/)
      const res = await a.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE }, payload: { title: 'Renamed' } })
      assert.equal(res.statusCode, 200, res.body)
      assert.ok(await until(async () => /<title>Renamed<\/title>/.test(await (await b.get('/')).text()), 1000))
    })

    it('shows a new alt text of the cover image, changed on instance A, on instance B within a second', async () => {
      const admin = await a.t.auth('ann', ['admin'])
      const image = await addImage(a.t, admin, 1200, 630, 'Before')
      const res = await a.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE }, payload: { cover_image: image.id } })
      assert.equal(res.statusCode, 200, res.body)
      assert.ok(await until(async () => /og:image:alt" content="Before"/.test(await (await b.get('/')).text()), 1000))
      const patched = await a.t.request({ method: 'PATCH', url: `/media/${image.id as string}`, headers: { ...admin, 'content-type': MERGE }, payload: { alt: 'After' } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.ok(await until(async () => /og:image:alt" content="After"/.test(await (await b.get('/')).text()), 1000), 'the new alt text within a second')
    })

    it('answers a page it keeps without asking the store', async () => {
      const first = await b.get('/')
      const etag = first.headers.get('etag')
      await first.text()
      await b.t.store.close()
      const again = await b.get('/')
      assert.equal(again.status, 200)
      assert.equal(again.headers.get('etag'), etag)
    })
  })
}
