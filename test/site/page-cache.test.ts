import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PageCache } from '../../src/site/page-cache.ts'
import { storeKinds } from '../helper.ts'
import { buildTestSite, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

const MERGE = 'application/merge-patch+json'

describe('PageCache', () => {
  it('keeps pages within its bounds, the least recently used out first', () => {
    const cache = new PageCache(16 * 4000, 3)
    const page = (body: string) => ({ status: 200, body, etag: '"e"' })
    for (const k of ['a', 'b', 'c']) cache.set(k, page(k), cache.generation)
    cache.get('a')
    cache.set('d', page('d'), cache.generation)
    assert.equal(cache.get('b'), undefined)
    assert.ok(cache.get('a') !== undefined && cache.get('d') !== undefined)
    cache.set('big', page('x'.repeat(10_000)), cache.generation)
    assert.equal(cache.get('big'), undefined, 'a page beyond a sixteenth of the bound is not kept')
  })

  it('does not keep a page rendered before the last clear', () => {
    const cache = new PageCache()
    const generation = cache.generation
    cache.clear()
    cache.set('a', { status: 200, body: 'old', etag: '"e"' }, generation)
    assert.equal(cache.get('a'), undefined)
  })
})

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
        return b.site.cache.size >= 2
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
