import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { json, storeKinds } from '../helper.ts'
import { addAuthor, buildTestSite, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

const MERGE = 'application/merge-patch+json'
/** Every change reaches the other instance's pages within this. */
const BOUND_MS = 1000

/** How long after `since` the page at `path` on `site` first satisfied `holds` (failing past the bound). */
async function seenWithin (site: TestSite, path: string, holds: (status: number, html: string) => boolean, since: number, what: string): Promise<void> {
  for (;;) {
    const res = await site.get(path)
    if (holds(res.status, await res.text())) return
    assert.ok(Date.now() - since <= BOUND_MS, `${what}: not on the other instance's ${path} within ${BOUND_MS} ms`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/**
 * What readers see follows every kind of change within a second on another instance (its pages
 * are kept in its own cache): a post published, unpublished, deleted, its tags changed, its author
 * renamed, the scheduler's switch. An edit and the site's settings are in page-cache.test.ts.
 */
if ((await storeKinds()).includes('postgres')) {
  describe('the site of a second instance follows every change within a second [postgres]', () => {
    let a: TestSite
    let b: TestSite
    let admin: { authorization: string }
    const patch = async (url: string, payload: object, headers: Record<string, string> = {}) => {
      const res = await a.t.request({ method: 'PATCH', url, headers: { ...admin, 'content-type': MERGE, ...headers }, payload })
      assert.equal(res.statusCode, 200, res.body)
      return Date.now()
    }
    before(async () => {
      a = await buildTestSite('postgres')
      b = await buildTestSite('postgres', { BACKGROUND_WORK: 'false' }, undefined, a.t.config.databaseUrl)
      admin = await a.t.auth('root', ['admin'])
    })

    it('a post published, then unpublished, then deleted', async () => {
      const draft = json(await a.t.request({ method: 'POST', url: '/posts', headers: admin, payload: { title: 'Quietly drafted', content: 'x', status: 'draft' } }))
      const page = `/${draft.slug as string}`
      assert.equal((await b.get(page)).status, 404)
      assert.doesNotMatch(await (await b.get('/')).text(), /Quietly drafted/)
      let at = await patch(`/posts/${draft.id as number}`, { status: 'published' })
      await seenWithin(b, page, s => s === 200, at, 'published: its page')
      await seenWithin(b, '/', (_, h) => h.includes('Quietly drafted'), at, 'published: the home page')
      at = await patch(`/posts/${draft.id as number}`, { status: 'draft' })
      await seenWithin(b, page, s => s === 404, at, 'unpublished')
      at = await patch(`/posts/${draft.id as number}`, { status: 'published' })
      await seenWithin(b, page, s => s === 200, at, 'published again')
      assert.equal((await a.t.request({ method: 'DELETE', url: `/posts/${draft.id as number}`, headers: admin })).statusCode, 204)
      at = Date.now()
      await seenWithin(b, page, s => s === 404, at, 'deleted: its page')
      await seenWithin(b, '/', (_, h) => !h.includes('Quietly drafted'), at, 'deleted: the home page')
    })

    it('a post\'s tags changed', async () => {
      const post = await publish(a.t, { title: 'Tagged once', tags: ['Old name'] }, admin)
      assert.match(await (await b.get('/tag/old-name')).text(), /Tagged once/)
      assert.equal((await b.get('/tag/new-name')).status, 404)
      const at = await patch(`/posts/${post.id as number}`, { tags: ['New name'] })
      await seenWithin(b, '/tag/new-name', (s, h) => s === 200 && h.includes('Tagged once'), at, 'the new tag\'s page')
      await seenWithin(b, '/tag/old-name', (s, h) => !h.includes('Tagged once'), at, 'the old tag\'s page')
    })

    it('an author renamed', async () => {
      const user = await addAuthor(a.t)
      const post = await publish(a.t, { title: 'Written by Ann', authors: ['ann'] }, admin)
      assert.match(await (await b.get(`/${post.slug as string}`)).text(), /Ann Writer/)
      assert.match(await (await b.get('/author/ann')).text(), /Ann Writer/)
      const current = await a.t.request({ method: 'GET', url: `/users/${user.id}`, headers: admin })
      const at = await patch(`/users/${user.id}`, { name: 'Ann Author' }, { 'if-match': String(current.headers.etag) })
      await seenWithin(b, `/${post.slug as string}`, (_, h) => h.includes('Ann Author') && !h.includes('Ann Writer'), at, 'the post\'s byline')
      await seenWithin(b, '/author/ann', (_, h) => h.includes('Ann Author'), at, 'the author\'s page')
    })

    it('the scheduler\'s switch', async () => {
      const publishAt = new Date(Date.now() + 1500).toISOString()
      const post = json(await a.t.request({ method: 'POST', url: '/posts', headers: admin, payload: { title: 'Due soon', content: 'x', status: 'scheduled', publish_at: publishAt } }))
      assert.equal(post.status, 'scheduled', JSON.stringify(post))
      const page = `/${post.slug as string}`
      assert.equal((await b.get(page)).status, 404)
      // The switch is answered when the API (on A, which runs the scheduler) shows the post published.
      for (;;) {
        const res = await a.t.request({ method: 'GET', url: `/posts/${post.id as number}`, headers: admin })
        if (json(res).status === 'published') break
        assert.ok(Date.now() < Date.parse(publishAt) + 5000, 'the scheduler published the post')
        await new Promise(resolve => setTimeout(resolve, 20))
      }
      await seenWithin(b, page, s => s === 200, Date.now(), 'switched by the scheduler')
    })
  })
}
