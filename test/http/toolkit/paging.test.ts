import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { PostStatus } from '../../../src/resources/posts/post.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { createPost } from '../../support/posts.ts'
import { before } from '../../support/hooks.ts'

/** `Link` header → { rel: url }. */
function links (header: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of String(header ?? '').matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)) out[m[2]!] = m[1]!
  return out
}

type Item = { id: number, title?: string }

for (const kind of await storeKinds()) {
  describe(`collection queries on GET /posts [${kind}]`, () => {
    let t: TestApp
    const same = new Date('2026-06-01T12:00:00.000Z')
    let sameIds: number[] = []

    before(async () => {
      t = await buildTestApp(kind)
      // 25 posts sharing created_at and title: only the id tie-breaker orders them.
      for (let i = 0; i < 25; i++) {
        sameIds.push((await createPost(t.store, { title: 'Same', content: `twin ${i}` }, { now: same })).id)
      }
      const others: [string, string, PostStatus, string][] = [
        ['Apple pie', 'sweet baking with apples', 'published', 'alice'],
        ['banana bread', 'baking with bananas', 'published', 'bob'],
        ['Cherry tart', 'a draft about cherries and baking', 'draft', 'alice'],
        ['Date squares', 'archived squares', 'archived', 'bob'],
      ]
      let minute = 0
      for (const [title, content, status, author] of others) {
        await createPost(t.store, { title, content, status }, { author, now: new Date(Date.UTC(2026, 6, 1, 0, minute++)) })
      }
      sameIds = sameIds.sort((a, b) => a - b)
    })

    const get = (url: string, headers: Record<string, string> = {}) => t.request({ method: 'GET', url, headers })
    async function problem (url: string, status: number, code: string, headers: Record<string, string> = {}) {
      const res = await get(url, headers)
      assert.equal(res.statusCode, status, url)
      const p = json(res)
      assert.equal(p.code, code, url)
      return p
    }

    /** Follows rel="next" from `url` and returns every id seen, in order. */
    async function walk (url: string, headers: Record<string, string> = {}): Promise<number[]> {
      const ids: number[] = []
      let next: string | undefined = url
      for (let guard = 0; next && guard < 100; guard++) {
        const res = await get(next, headers)
        assert.equal(res.statusCode, 200, next)
        ids.push(...json<Item[]>(res).map(i => i.id))
        next = links(res.headers.link).next
      }
      return ids
    }

    describe('sort', () => {
      it('defaults to newest first with id as the last tie-breaker', async () => {
        const ids = await walk('/posts?limit=100')
        const twins = ids.filter(id => sameIds.includes(id))
        assert.deepEqual(twins, [...sameIds].reverse(), 'equal created_at: id descending')
      })

      it('accepts -key, key, key:asc and key:desc, several keys', async () => {
        const asc = json<Item[]>(await get('/posts?sort=title&fields=id,title&limit=100')).map(i => i.title)
        assert.deepEqual(json<Item[]>(await get('/posts?sort=title:asc&fields=id,title&limit=100')).map(i => i.title), asc)
        assert.deepEqual(asc.slice(0, 2), ['Apple pie', 'Same'], 'byte order: upper case before lower case')
        const desc = json<Item[]>(await get('/posts?sort=-title&fields=id,title&limit=100')).map(i => i.title)
        assert.deepEqual(json<Item[]>(await get('/posts?sort=title:desc&fields=id,title&limit=100')).map(i => i.title), desc)
        assert.equal(desc[0], 'banana bread')
        const multi = json<Item[]>(await get('/posts?sort=title,-id&limit=100'))
        const twins = multi.filter(i => i.title === 'Same').map(i => i.id)
        assert.deepEqual(twins, [...sameIds].reverse())
      })

      it('rejects unknown keys, directions and repeats with 422', async () => {
        for (const sort of ['colour', 'title:up', 'title,title', '-', 'content', 'title:asc:extra']) {
          const p = await problem(`/posts?sort=${encodeURIComponent(sort)}`, 422, 'VALIDATION_FAILED')
          assert.equal(p.errors[0].field, 'sort')
        }
      })

      it('gives the same order for the same query, twice', async () => {
        for (const sort of ['-created_at', 'title', 'updated_at', '-id', 'title:desc,created_at']) {
          const a = await walk(`/posts?sort=${sort}&limit=7`)
          const b = await walk(`/posts?sort=${sort}&limit=7`)
          assert.deepEqual(a, b, sort)
          assert.equal(new Set(a).size, a.length, `${sort}: no repeats`)
          assert.equal(a.length, 27, `${sort}: every visible post`)
        }
      })
    })

    describe('page size', () => {
      it('is 20 by default; limit and per_page are synonyms up to 100', async () => {
        assert.equal(json<Item[]>(await get('/posts')).length, 20)
        assert.equal(json<Item[]>(await get('/posts?limit=5')).length, 5)
        assert.equal(json<Item[]>(await get('/posts?per_page=6')).length, 6)
        assert.equal(json<Item[]>(await get('/posts?per_page=7&limit=7')).length, 7)
        assert.equal(json<Item[]>(await get('/posts?limit=100')).length, 27)
      })

      it('rejects sizes outside 1..100 and disagreeing synonyms with 422, never clamps', async () => {
        for (const q of ['limit=101', 'limit=0', 'per_page=1000', 'limit=-1', 'limit=abc', 'limit=5&per_page=6', 'page=0', 'page=x', 'limit=0x2', 'limit=1e1', 'limit=%202', 'page=1.0', 'limit=05']) {
          await problem(`/posts?${q}`, 422, 'VALIDATION_FAILED')
        }
      })
    })

    describe('fields, include and unknown parameters', () => {
      it('returns exactly the fields asked for', async () => {
        const items = json<Record<string, unknown>[]>(await get('/posts?fields=title,author,status'))
        for (const item of items) assert.deepEqual(Object.keys(item).sort(), ['author', 'status', 'title'])
        const v2 = json<Record<string, unknown>[]>(await get('/v2/posts?fields=postId,content'))
        for (const item of v2) assert.deepEqual(Object.keys(item).sort(), ['_links', 'content', 'postId'])
      })

      it('rejects unknown fields, any include, and unknown parameters with 422', async () => {
        assert.equal((await problem('/posts?fields=title,colour', 422, 'VALIDATION_FAILED')).errors[0].field, 'fields')
        assert.equal((await problem('/posts?include=author', 422, 'VALIDATION_FAILED')).errors[0].field, 'include')
        const p = await problem('/posts?stauts=draft', 422, 'VALIDATION_FAILED')
        assert.deepEqual(p.errors[0], { field: 'stauts', code: 'UNKNOWN_PARAMETER', message: 'is not a query parameter of this endpoint' })
      })
    })

    describe('status filter and visibility', () => {
      it('filters by a known status and rejects an unknown one', async () => {
        const published = await walk('/posts?status=published&fields=id,status&limit=50')
        assert.equal(published.length, 27)
        await problem('/posts?status=hidden', 422, 'VALIDATION_FAILED')
      })

      it('never shows drafts or archived posts to others, and counts only what is visible', async () => {
        const anon = await get('/posts?limit=100', { prefer: 'count=exact' })
        assert.equal(anon.headers['x-total-count'], '27')
        assert.equal(anon.headers['preference-applied'], 'count=exact')
        assert.equal(json<Item[]>(await get('/posts?status=draft')).length, 0)
        const alice = await t.auth('alice', [])
        const own = json<{ title: string }[]>(await get('/posts?limit=100&fields=title', alice)).map(i => i.title)
        assert.ok(own.includes('Cherry tart'), 'the author sees her draft')
        assert.ok(!own.includes('Date squares'), 'but not someone else\'s archived post')
        assert.ok(own.includes('banana bread'), 'beside everyone\'s published posts')
        const admin = await get('/posts?limit=100', { ...(await t.auth('root', ['admin'])), prefer: 'count=exact' })
        assert.equal(admin.headers['x-total-count'], '29')
        // Pages stay full: visibility is in the query, not a filter after paging.
        assert.equal(json<Item[]>(await get('/posts?limit=27&sort=title')).length, 27)
      })

      it('sends no count without Prefer: count=exact', async () => {
        const res = await get('/posts')
        assert.equal(res.headers['x-total-count'], undefined)
        assert.equal(res.headers['preference-applied'], undefined)
      })
    })

    describe('caching of lists', () => {
      it('varies on Prefer and gives counted and uncounted lists different validators', async () => {
        const plain = await get('/posts?limit=3')
        const counted = await get('/posts?limit=3', { prefer: 'count=exact' })
        assert.match(String(counted.headers.vary), /Prefer/)
        assert.notEqual(plain.headers.etag, counted.headers.etag)
      })
    })

    describe('offset paging', () => {
      it('links first, prev, next and last with the same filters', async () => {
        const res = await get('/posts?status=published&limit=10&page=2&sort=id')
        const l = links(res.headers.link)
        assert.equal(l.first, '/posts?status=published&limit=10&page=1&sort=id')
        assert.equal(l.prev, '/posts?status=published&limit=10&page=1&sort=id')
        assert.equal(l.next, '/posts?status=published&limit=10&page=3&sort=id')
        assert.equal(l.last, '/posts?status=published&limit=10&page=3&sort=id')
        const last = await get(l.last!)
        assert.equal(links(last.headers.link).next, undefined)
        assert.equal(json<Item[]>(last).length, 7)
      })

      it('returns every post exactly once, in the same order, twice', async () => {
        const a = await walk('/posts?sort=created_at&limit=4&page=1')
        const b = await walk('/posts?sort=created_at&limit=4&page=1')
        assert.deepEqual(a, b)
        assert.equal(a.length, 27)
        assert.equal(new Set(a).size, 27)
        assert.deepEqual(a.filter(id => sameIds.includes(id)), sameIds)
      })

      it('cannot be combined with a cursor', async () => {
        const next = links((await get('/posts?limit=2')).headers.link).next!
        await problem(`${next}&page=2`, 422, 'VALIDATION_FAILED')
      })
    })

    describe('cursor paging', () => {
      it('is the default: first page links first and next (with a cursor), no prev', async () => {
        const l = links((await get('/posts?limit=5&status=published')).headers.link)
        assert.equal(l.first, '/posts?limit=5&status=published')
        assert.match(l.next!, /^\/posts\?limit=5&status=published&cursor=[\w-]+\.[\w-]+$/)
        assert.equal(l.prev, undefined)
        assert.equal(l.last, undefined)
      })

      it('returns every post exactly once across equal sort values, in the same order, twice', async () => {
        for (const sort of ['created_at', '-created_at', 'title', '-title']) {
          const a = await walk(`/posts?sort=${sort}&limit=4`)
          const b = await walk(`/posts?sort=${sort}&limit=4`)
          assert.deepEqual(a, b, sort)
          assert.equal(a.length, 27, sort)
          assert.equal(new Set(a).size, 27, sort)
        }
        const offset = await walk('/posts?sort=title&limit=4&page=1')
        assert.deepEqual(await walk('/posts?sort=title&limit=4'), offset, 'cursor and offset paging agree')
      })

      it('goes back with prev to exactly the page before', async () => {
        const p1 = await get('/posts?limit=5&sort=id')
        const p2 = await get(links(p1.headers.link).next!)
        const p3 = await get(links(p2.headers.link).next!)
        const back = await get(links(p3.headers.link).prev!)
        assert.deepEqual(json(back), json(p2))
        const back2 = await get(links(back.headers.link).prev!)
        assert.deepEqual(json(back2), json(p1))
        assert.equal(links(back2.headers.link).prev, undefined, 'nothing before the first page')
      })

      it('never repeats an item while posts are inserted during paging', async () => {
        const seen: number[] = []
        let next: string | undefined = '/posts?limit=3&sort=-created_at'
        const alice = await t.auth('alice')
        for (let page = 0; next && page < 50; page++) {
          const res = await get(next)
          seen.push(...json<Item[]>(res).map(i => i.id))
          await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: `inserted ${page}`, content: '' } })
          next = links(res.headers.link).next
        }
        assert.equal(new Set(seen).size, seen.length)
        assert.ok(seen.length >= 27)
        for (const id of await walk('/posts?limit=100')) if (!seen.includes(id)) assert.ok(id > Math.max(...sameIds), 'only new posts were missed')
        await t.searchIndexed()
        const page = json<Item[]>(await get('/posts?limit=100&q=inserted&fields=id'))
        for (const { id } of page) await t.request({ method: 'DELETE', url: `/posts/${id}`, headers: alice })
      })

      it('answers 400 INVALID_CURSOR for a tampered, garbled or foreign cursor', async () => {
        const next = links((await get('/posts?limit=2&sort=title')).headers.link).next!
        const cursor = new URL(next, 'http://x').searchParams.get('cursor')!
        const [payload, mac] = cursor.split('.')
        const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), k: ['A', 1] })).toString('base64url')
        for (const bad of [`${forged}.${mac}`, 'garbage', `${payload}.AAAA`, `${payload}`, `${cursor}.x`]) {
          await problem(`/posts?limit=2&sort=title&cursor=${encodeURIComponent(bad)}`, 400, 'INVALID_CURSOR')
        }
        // A genuine cursor of another query (other sort or filter) is foreign here.
        await problem(`/posts?limit=2&sort=-title&cursor=${encodeURIComponent(cursor)}`, 400, 'INVALID_CURSOR')
        await problem(`/posts?limit=2&sort=title&status=draft&cursor=${encodeURIComponent(cursor)}`, 400, 'INVALID_CURSOR')
        // …but the page size may change between pages.
        assert.equal((await get(`/posts?limit=3&sort=title&cursor=${encodeURIComponent(cursor)}`)).statusCode, 200)
      })
    })

    describe('full-text search', () => {
      it('matches every word in title or content, paged and sorted like any list', async () => {
        const titles = (url: string) => get(url).then(r => json<{ title: string }[]>(r).map(i => i.title))
        await t.searchIndexed()
        assert.deepEqual(await titles('/posts?q=baking&sort=title&fields=title'), ['Apple pie', 'banana bread'])
        assert.deepEqual(await titles('/posts?q=baking%20apples&fields=title'), ['Apple pie'])
        assert.deepEqual(await titles('/posts?q=APPLE&fields=title'), ['Apple pie'])
        assert.deepEqual(await titles('/posts?q=nothing-like-this&fields=title'), [])
        assert.deepEqual(await titles('/posts?q=%22%20OR%20*&fields=title'), [], 'search syntax is treated as words')
        for (const q of ['%20', '%09', '%C2%A0', '%E2%80%83', '%00', 'a%00b']) {
          await problem(`/posts?q=${q}`, 422, 'VALIDATION_FAILED')
        }
        assert.deepEqual(await titles('/posts?q=!!!&fields=title'), [], 'punctuation alone matches nothing')
        assert.equal(json<Item[]>(await get('/posts?q=twin&limit=10')).length, 10)
        assert.equal((await walk('/posts?q=twin&limit=10')).length, 25)
      })

      it('hides drafts from strangers and follows changes', async () => {
        assert.deepEqual(json(await get('/posts?q=cherries')), [])
        const alice = await t.auth('alice')
        assert.equal(json<Item[]>(await get('/posts?q=cherries', alice)).length, 1)
        const id = sameIds[0]!
        await t.request({ method: 'PUT', url: `/posts/${id}`, headers: alice, payload: { title: 'Renamed', content: 'zeppelin' } })
        await t.searchIndexed()
        assert.deepEqual(json<Item[]>(await get('/posts?q=zeppelin')).map(i => i.id), [id])
        assert.equal(json<Item[]>(await get('/posts?q=twin&limit=100')).length, 24)
        await t.request({ method: 'PUT', url: `/posts/${id}`, headers: alice, payload: { title: 'Same', content: 'twin 0' } })
      })
    })
  })
}
