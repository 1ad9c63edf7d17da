import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { bearer, buildTestApp, json, storeKinds, type TestApp, twoInstances } from '../../../helper.ts'
import { before } from '../../../support/hooks.ts'

/** Writes that search must see at once: more than one batch of the indexer would be only with 30. */
const WRITES = 30

/** An instance with no background work: only a search itself can feed the index. */
const NO_BACKGROUND = { BACKGROUND_WORK: 'false' }

for (const kind of await storeKinds()) {
  describe(`GET /posts?q= reads its own writes [${kind}]`, () => {
    let t: TestApp
    let alice: Record<string, string>
    before(async () => {
      t = await buildTestApp(kind, { BACKGROUND_WORK: 'false', RATE_LIMIT_MAX: '0' })
      alice = await t.auth('alice')
    })

    it(`finds all of ${WRITES} posts created just before, with status, count and tag`, async () => {
      for (let i = 0; i < WRITES; i++) {
        const res = await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: `Quokka ${i}`, content: 'smiles a lot', tags: ['Marsupial'], status: i % 2 === 0 ? 'published' : 'draft' } })
        assert.equal(res.statusCode, 201, res.body)
      }
      const all = await t.request({ method: 'GET', url: '/posts?q=quokka&limit=100&fields=id', headers: { ...alice, prefer: 'count=exact' } })
      assert.equal(json<unknown[]>(all).length, WRITES)
      assert.equal(all.headers['x-total-count'], String(WRITES))
      const published = await t.request({ method: 'GET', url: '/posts?q=smiles&status=published&tag=marsupial&limit=100&fields=id', headers: alice })
      assert.equal(json<unknown[]>(published).length, WRITES / 2)
    })

    it('forgets an edit\'s old words at once', async () => {
      const made = await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Numbat', content: 'eats termites' } })
      const { id } = json<{ id: number }>(made)
      const put = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: { ...alice, 'if-match': String(made.headers.etag) }, payload: { title: 'Bilby', content: 'digs burrows' } })
      assert.equal(put.statusCode, 200, put.body)
      assert.deepEqual(json<{ id: number }[]>(await t.request({ method: 'GET', url: '/posts?q=numbat&fields=id', headers: alice })), [])
      assert.deepEqual(json<{ id: number }[]>(await t.request({ method: 'GET', url: '/posts?q=bilby&fields=id', headers: alice })).map(p => p.id), [id])
    })
  })

  describe(`GET /posts?q= on a second instance reads the first's writes [${kind}]`, () => {
    it(`finds all of ${WRITES} posts another instance created just before`, async c => {
      const { a, b } = await twoInstances(c, kind, NO_BACKGROUND)
      const authorization = await bearer('alice')
      for (let i = 0; i < WRITES; i++) {
        const res = await a.inject({ method: 'POST', url: '/posts', headers: { authorization }, payload: { title: `Wallaby ${i}`, content: 'hops' } })
        assert.equal(res.statusCode, 201, res.body)
      }
      const res = await b.inject({ method: 'GET', url: '/posts?q=wallaby&limit=100&fields=id', headers: { authorization, prefer: 'count=exact' } })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers['x-total-count'], String(WRITES))
    })
  })
}
