import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { FRESH_MS } from '../../../src/http/protocol/public-cache.ts'
import { bearer, buildTestApp, json, storeKinds, twoInstances, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'
import { until } from '../../support/poll.ts'
import { TcpProxy } from '../../tcp-proxy.ts'

/** Headers that belong to one request, which a hit makes anew. */
const PER_REQUEST = ['date', 'x-request-id', 'traceparent', 'ratelimit', 'ratelimit-policy']

function sameAnswer (hit: LightMyRequestResponse, miss: LightMyRequestResponse): void {
  assert.equal(hit.statusCode, miss.statusCode)
  assert.ok(hit.rawPayload.equals(miss.rawPayload), 'the same bytes')
  const strip = (h: LightMyRequestResponse['headers']) => Object.fromEntries(Object.entries(h).filter(([k]) => !PER_REQUEST.includes(k)))
  assert.deepEqual(strip(hit.headers), strip(miss.headers))
  for (const name of PER_REQUEST.filter(n => n !== 'date' && miss.headers[n] !== undefined)) assert.ok(hit.headers[name] !== undefined, `${name} on a hit too`)
}

/**
 * Counts calls of every repository's methods but those background readers poll on their own
 * clocks: the event log's (its reader) and the revoked sessions' (the access tokens' cache).
 */
function countQueries (t: TestApp): { readonly n: number } {
  const counter = { n: 0 }
  for (const [name, repo] of Object.entries(t.store)) {
    if (name === 'events' || repo === null || typeof repo !== 'object' || !/Repository$/.test(repo.constructor.name)) continue
    for (const m of Object.getOwnPropertyNames(Object.getPrototypeOf(repo))) {
      const fn = (repo as Record<string, unknown>)[m]
      if (m === 'constructor' || m === 'revocations' || typeof fn !== 'function') continue
      ;(repo as Record<string, unknown>)[m] = function (this: unknown, ...args: unknown[]) {
        counter.n++
        return (fn as (...a: unknown[]) => unknown).apply(this, args)
      }
    }
  }
  return counter
}

/** Until this instance's reader of the event log has read it through from after now (its own writes' events seen, the cache emptied by them). */
async function logRead (t: TestApp): Promise<void> {
  const after = performance.now()
  await until(() => t.context.services.eventStreams.lastRead > after, 'the event log read', 5000)
}

for (const kind of await storeKinds()) {
  describe(`the public answers cache [${kind}]`, () => {
    let t: TestApp
    let alice: { authorization: string }
    let queries: { readonly n: number }
    let id: number
    before(async () => {
      // The event log's reader empties the cache again when it reads this instance's own events: quickly here.
      t = await buildTestApp(kind, { BACKGROUND_WORK: 'false', EVENTS_POLL_MS: '10' })
      alice = await t.auth('alice', ['posts:write'])
      id = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Kept', content: 'x'.repeat(3000), tags: ['a'] } })).id
      queries = countQueries(t)
      await new Promise(resolve => setTimeout(resolve, 300))
    })

    const reads = ['/posts/ID', '/v2/posts/ID', '/posts/by-slug/kept', '/posts?limit=20', '/posts?limit=5&fields=id,title', '/tags', '/feed.atom', '/feed.json', '/authors']
    for (const path of reads) {
      it(`answers GET ${path} again with the same bytes and headers, no store query and no rendering`, async () => {
        const url = path.replace('ID', String(id))
        const headers = { 'accept-encoding': 'gzip' }
        const before = queries.n
        const miss = await t.request({ method: 'GET', url, headers })
        assert.equal(miss.statusCode, 200, miss.body)
        assert.ok(queries.n > before, 'a miss reads the store (the counter counts)')
        const counted = queries.n
        const hit = await t.request({ method: 'GET', url, headers })
        assert.equal(queries.n, counted, 'a hit reads nothing')
        sameAnswer(hit, miss)
        const headHit = await t.request({ method: 'HEAD', url, headers })
        assert.equal(queries.n, counted, 'HEAD is answered from the GET kept')
        t.context.publicCache!.clear()
        sameAnswer(headHit, await t.request({ method: 'HEAD', url, headers }))
      })
    }

    it('keeps one answer per Accept (version) and Prefer', async () => {
      const url = `/posts/${id}`
      const v1 = await t.request({ method: 'GET', url })
      const v2 = await t.request({ method: 'GET', url, headers: { accept: 'application/vnd.blog.v2+json' } })
      assert.equal(v2.headers['api-version'], '2')
      assert.notEqual(v1.headers.etag, v2.headers.etag)
      const counted = queries.n
      assert.equal((await t.request({ method: 'GET', url, headers: { accept: 'application/vnd.blog.v2+json' } })).headers.etag, v2.headers.etag)
      assert.equal((await t.request({ method: 'GET', url })).headers.etag, v1.headers.etag)
      assert.equal(queries.n, counted)
      await t.request({ method: 'GET', url: '/posts' })
      const counting = await t.request({ method: 'GET', url: '/posts', headers: { prefer: 'count=exact' } })
      assert.equal(counting.headers['x-total-count'], '1')
    })

    it('answers 304 from the cache when If-None-Match matches, as a miss does', async () => {
      const url = `/posts/${id}`
      const first = await t.request({ method: 'GET', url })
      const counted = queries.n
      const hit304 = await t.request({ method: 'GET', url, headers: { 'if-none-match': String(first.headers.etag) } })
      assert.equal(hit304.statusCode, 304)
      assert.equal(queries.n, counted)
      t.context.publicCache!.clear()
      const miss304 = await t.request({ method: 'GET', url, headers: { 'if-none-match': String(first.headers.etag) } })
      assert.ok(queries.n > counted)
      sameAnswer(hit304, miss304)
    })

    it('is not used by a request with credentials or a cookie', async () => {
      const url = `/posts/${id}`
      await t.request({ method: 'GET', url })
      for (const headers of [alice, { cookie: 'a=b' }]) {
        const counted = queries.n
        const res = await t.request({ method: 'GET', url, headers })
        assert.equal(res.statusCode, 200)
        assert.ok(queries.n > counted, `read from the store with ${Object.keys(headers).join()}`)
      }
      const own = await t.request({ method: 'GET', url, headers: alice })
      assert.equal(own.headers['cache-control'], 'private, no-store')
    })

    it('keeps no draft and no error', async () => {
      const draft = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Hidden', content: 'y', status: 'draft' } }))
      for (const [url, status] of [[`/posts/${draft.id}`, 404], ['/posts/999999', 404]] as const) {
        await t.request({ method: 'GET', url })
        const counted = queries.n
        assert.equal((await t.request({ method: 'GET', url })).statusCode, status, url)
        assert.ok(queries.n > counted, `${url} is read again`)
      }
    })

    it('shows a write on this instance to the very next anonymous read', async () => {
      const url = `/posts/${id}`
      assert.equal(json(await t.request({ method: 'GET', url })).title, 'Kept')
      await t.request({ method: 'GET', url: '/posts?limit=20' })
      const patched = await t.request({ method: 'PATCH', url, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: { title: 'Changed' } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(json(await t.request({ method: 'GET', url })).title, 'Changed')
      assert.equal(json(await t.request({ method: 'GET', url: '/posts?limit=20' })).find((p: { id: number }) => p.id === id).title, 'Changed')
      const gone = await t.request({ method: 'PATCH', url, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: { status: 'draft' } })
      assert.equal(gone.statusCode, 200, gone.body)
      assert.equal((await t.request({ method: 'GET', url })).statusCode, 404)
    })

    it('counts hits and misses', async () => {
      const text = await t.scrape()
      assert.match(text, /^public_cache_hits_total [1-9]/m)
      assert.match(text, /^public_cache_misses_total [1-9]/m)
    })
  })

  describe(`the public answers cache's bounds [${kind}]`, () => {
    async function sizeOfOne (): Promise<number> {
      const t = await buildTestApp(kind)
      const a = await t.auth('alice', ['posts:write'])
      await t.request({ method: 'POST', url: '/posts', headers: a, payload: { title: 'One', content: 'z' } })
      await logRead(t)
      await t.request({ method: 'GET', url: '/posts/1' })
      assert.equal(t.context.publicCache!.count, 1)
      return t.context.publicCache!.bytes
    }

    it('keeps an answer that just fits, not one just over, and lets the oldest go when full', async () => {
      const size = await sizeOfOne()
      for (const [bytes, kept] of [[size, 1], [size - 1, 0]] as const) {
        const t = await buildTestApp(kind, { PUBLIC_CACHE_BYTES: String(bytes) })
        const a = await t.auth('alice', ['posts:write'])
        await t.request({ method: 'POST', url: '/posts', headers: a, payload: { title: 'One', content: 'z' } })
        await t.request({ method: 'POST', url: '/posts', headers: a, payload: { title: 'Two', content: 'z' } })
        await logRead(t)
        await t.request({ method: 'GET', url: '/posts/1' })
        assert.equal(t.context.publicCache!.count, kept, `${bytes} bytes`)
        if (kept === 0) continue
        await t.request({ method: 'GET', url: '/posts/2' })
        assert.equal(t.context.publicCache!.count, 1)
        assert.ok(t.context.publicCache!.bytes <= bytes)
        const counted = countQueries(t)
        await t.request({ method: 'GET', url: '/posts/1' })
        assert.ok(counted.n > 0, 'the oldest was let go')
      }
    })

    it('is off with PUBLIC_CACHE_BYTES=0', async () => {
      const t = await buildTestApp(kind, { PUBLIC_CACHE_BYTES: '0' })
      assert.equal(t.context.publicCache, null)
      const a = await t.auth('alice', ['posts:write'])
      await t.request({ method: 'POST', url: '/posts', headers: a, payload: { title: 'One', content: 'z' } })
      await t.request({ method: 'GET', url: '/posts/1' })
      const counted = countQueries(t)
      assert.equal((await t.request({ method: 'GET', url: '/posts/1' })).statusCode, 200)
      assert.ok(counted.n > 0)
      assert.doesNotMatch(await t.scrape(), /public_cache_hits_total/)
    })
  })

  if (kind === 'postgres') {
    describe('the public answers cache on two instances [postgres]', () => {
      it('shows a write on instance A to anonymous reads on instance B within 1 s', async c => {
        const { a, b } = await twoInstances(c, kind)
        const authorization = await bearer('alice')
        const created = await a.inject({ method: 'POST', url: '/posts', headers: { authorization }, payload: { title: 'Before', content: 'x' } })
        const url = `/posts/${json(created).id}`
        assert.equal(json(await b.inject({ method: 'GET', url })).title, 'Before')
        assert.equal(json(await b.inject({ method: 'GET', url: '/posts' }))[0].title, 'Before')
        await a.inject({ method: 'PATCH', url, headers: { authorization, 'content-type': 'application/merge-patch+json' }, payload: { title: 'After' } })
        const seen = Date.now()
        await until(async () => json(await b.inject({ method: 'GET', url })).title === 'After', 'B to show the change within 1 s', 1000)
        assert.ok(Date.now() - seen <= 1100)
        assert.equal(json(await b.inject({ method: 'GET', url: '/posts' }))[0].title, 'After')
      })

      it('stops answering from memory within a second of losing the store, and answers 503 instead', async () => {
        const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5432 })
        const t = await buildTestApp('postgres', { STORE_BUDGET_MS: '300', EVENTS_POLL_MS: '100' }, { url: u => proxy.via(u) })
        try {
          const a = await t.auth('alice', ['posts:write'])
          const url = `/posts/${json(await t.request({ method: 'POST', url: '/posts', headers: a, payload: { title: 'Kept', content: 'x' } })).id}`
          await t.app.inject({ method: 'GET', url })
          assert.equal((await t.app.inject({ method: 'GET', url })).statusCode, 200)
          assert.ok(t.context.publicCache!.count > 0)
          proxy.hold()
          const lost = Date.now()
          await until(async () => (await t.app.inject({ method: 'GET', url })).statusCode === 503, 'a 503 within a second and a half', 1500)
          assert.ok(Date.now() - lost <= FRESH_MS + 500, `after ${Date.now() - lost} ms`)
        } finally {
          proxy.heal()
          await t.close()
          await proxy.close()
        }
      })
    })
  }
}
