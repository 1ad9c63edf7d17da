import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { SEARCH_INDEX_BATCH } from '../../../../src/resources/posts/jobs/search-indexer.ts'
import type { KyselyStore } from '../../../../src/store/kysely-store.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../../helper.ts'
import { until } from '../../../support/poll.ts'
import { before } from '../../../support/hooks.ts'

/** How far behind a write search may be, as docs/querying.md promises it. */
const BOUND_MS = 2000

for (const kind of await storeKinds()) {
  describe(`GET /posts?q= follows writes within ${BOUND_MS} ms [${kind}]`, () => {
    let t: TestApp
    let alice: Record<string, string>
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice')
    })

    const ids = async (q: string) => json<{ id: number }[]>(await t.request({ method: 'GET', url: `/posts?q=${encodeURIComponent(q)}&fields=id`, headers: alice })).map(p => p.id)

    /** Polls the search until it answers `want`; fails when that takes longer than the bound. */
    async function answersWithinBound (q: string, want: number[], what: string): Promise<void> {
      await until(async () => JSON.stringify(await ids(q)) === JSON.stringify(want), `${what} to answer ${JSON.stringify(want)}`, BOUND_MS)
    }

    async function backlogEmptyWithinBound (): Promise<void> {
      await until(async () => await t.store.posts.searchBacklog() === 0, 'no post to wait for the index', BOUND_MS)
    }

    it('finds a created post, forgets an edit\'s old words and a deleted post, by the indexer job alone', async () => {
      const res = await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Platypus', content: 'lays eggs', tags: ['Monotreme'] } })
      assert.equal(res.statusCode, 201)
      const { id } = json<{ id: number }>(res)
      await answersWithinBound('platypus eggs', [id], 'a created post')
      await answersWithinBound('monotreme', [id], 'its tags')

      const put = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: { ...alice, 'if-match': String(res.headers.etag) }, payload: { title: 'Echidna', content: 'has spines' } })
      assert.equal(put.statusCode, 200, put.body)
      await answersWithinBound('echidna spines', [id], 'an edit\'s new words')
      assert.deepEqual(await ids('platypus'), [], 'an edit\'s old words are gone with its new ones')
      assert.deepEqual(await ids('monotreme'), [], 'so are tags it dropped')

      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${id}`, headers: alice })).statusCode, 204)
      // Gone from results at once (the search reads only posts that exist); from the index within the bound.
      assert.deepEqual(await ids('echidna'), [])
      await backlogEmptyWithinBound()
      if (kind === 'sqlite') {
        const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM posts_fts WHERE posts_fts MATCH 'echidna OR platypus'`.execute((t.store as KyselyStore).db)
        assert.equal(rows[0]!.n, 0, 'the deleted post left the full-text index')
      }
    })

    it('catches up with more writes than one batch takes', async () => {
      const created: number[] = []
      for (let i = 0; i < SEARCH_INDEX_BATCH * 2 + 3; i++) {
        const res = await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: `Batch ${i}`, content: 'wombat burrows' } })
        created.push(json<{ id: number }>(res).id)
      }
      await backlogEmptyWithinBound()
      const res = await t.request({ method: 'GET', url: '/posts?q=wombat&limit=1', headers: { ...alice, prefer: 'count=exact' } })
      assert.equal(res.headers['x-total-count'], String(created.length))
    })
  })
}
