import assert from 'node:assert/strict'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { describe, it } from 'node:test'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

describe('content negotiation, Prefer, compression and versions', () => {
  let t: TestApp
  let alice: { authorization: string }
  let id: number
  before(async () => {
    t = await buildTestApp('sqlite')
    alice = await t.auth('alice')
    id = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Negotiated', content: 'x'.repeat(3000) } })).id
  })

  const get = (url: string, headers: Record<string, string> = {}) => t.request({ method: 'GET', url, headers })

  describe('Accept', () => {
    it('serves version 1 as application/json by default and for */*', async () => {
      for (const accept of [undefined, '*/*', 'application/json', 'application/*']) {
        const res = await get(`/posts/${id}`, accept === undefined ? {} : { accept })
        assert.equal(res.statusCode, 200, String(accept))
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
        assert.equal(res.headers['api-version'], '1')
        assert.equal(json(res).id, id)
      }
    })

    it('serves the vendor types with their own Content-Type and shape', async () => {
      const v1 = await get(`/posts/${id}`, { accept: 'application/vnd.blog.v1+json' })
      assert.equal(v1.headers['content-type'], 'application/vnd.blog.v1+json; charset=utf-8')
      assert.equal(json(v1).id, id)
      const v2 = await get(`/posts/${id}`, { accept: 'application/vnd.blog.v2+json' })
      assert.equal(v2.headers['content-type'], 'application/vnd.blog.v2+json; charset=utf-8')
      assert.equal(v2.headers['api-version'], '2')
      const body = json(v2)
      assert.equal(body.postId, id)
      assert.equal(body.id, undefined)
      assert.deepEqual(body._links, { self: { href: `/posts/${id}` }, update: { href: `/posts/${id}`, method: 'PUT' }, delete: { href: `/posts/${id}`, method: 'DELETE' } })
    })

    it('weighs q-values', async () => {
      const res = await get(`/posts/${id}`, { accept: 'application/vnd.blog.v2+json;q=0.5, application/json' })
      assert.equal(json(res).id, id)
      const res2 = await get(`/posts/${id}`, { accept: 'text/html;q=1, application/vnd.blog.v2+json;q=0.1' })
      assert.equal(json(res2).postId, id)
      // The most specific range decides: q=0 refuses plain JSON though */* matches it; the vendor type is acceptable.
      const res3 = await get(`/posts/${id}`, { accept: 'application/json;q=0, */*;q=0.1' })
      assert.equal(res3.statusCode, 200)
      assert.match(String(res3.headers['content-type']), /^application\/vnd\.blog\.v1\+json/)
      assert.equal(json(res3).id, id)
      const res4 = await get(`/v2/posts/${id}`, { accept: 'application/json;q=0, application/*' })
      assert.match(String(res4.headers['content-type']), /^application\/vnd\.blog\.v2\+json/)
      assert.match(String((await get(`/posts/${id}`, { accept: '*/*;q=0.1, application/json;q=0.5' })).headers['content-type']), /^application\/json/)
    })

    it('answers 406 when nothing acceptable can be produced', async () => {
      for (const accept of ['text/html', 'application/xml', 'application/vnd.blog.v3+json', 'application/json;q=0']) {
        const res = await get(`/posts/${id}`, { accept })
        assert.equal(res.statusCode, 406, accept)
        assert.equal(json(res).code, 'NOT_ACCEPTABLE')
      }
    })

    it('serves versions by path, and 406 when path and Accept disagree', async () => {
      const v2 = await get(`/v2/posts/${id}`)
      assert.equal(json(v2).postId, id)
      assert.equal(json(v2)._links.self.href, `/v2/posts/${id}`)
      assert.equal(json(await get(`/v1/posts/${id}`)).id, id)
      assert.equal((await get(`/v1/posts/${id}`, { accept: 'application/vnd.blog.v2+json' })).statusCode, 406)
      assert.equal((await get(`/v2/posts/${id}`, { accept: 'application/vnd.blog.v2+json' })).statusCode, 200)
      assert.equal((await get(`/v3/posts/${id}`)).statusCode, 404)
    })

    it('gives version 2 list items their self link', async () => {
      const items = json(await get('/v2/posts'))
      assert.ok(items.length > 0)
      for (const item of items) {
        assert.deepEqual(Object.keys(item).sort(), ['_links', 'postId', 'title'])
        assert.equal(item._links.self.href, `/v2/posts/${item.postId}`)
      }
    })
  })

  describe('Prefer', () => {
    it('return=minimal on POST: 201, Location, no body', async () => {
      const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, prefer: 'return=minimal' }, payload: { title: 'min', content: '' } })
      assert.equal(res.statusCode, 201)
      assert.equal(res.body, '')
      assert.match(String(res.headers.location), /^\/posts\/\d+$/)
      assert.equal(res.headers['preference-applied'], 'return=minimal')
    })

    it('return=minimal on PUT: 204; return=representation is the default', async () => {
      const res = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: { ...alice, prefer: 'return=minimal' }, payload: { title: 'Negotiated', content: 'x'.repeat(3000) } })
      assert.equal(res.statusCode, 204)
      assert.equal(res.headers['preference-applied'], 'return=minimal')
      const full = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: { ...alice, prefer: 'return=representation' }, payload: { title: 'Negotiated', content: 'x'.repeat(3000) } })
      assert.equal(full.statusCode, 200)
      assert.equal(full.headers['preference-applied'], 'return=representation')
      const plain = await t.request({ method: 'PUT', url: `/posts/${id}`, headers: alice, payload: { title: 'Negotiated', content: 'x'.repeat(3000) } })
      assert.equal(plain.headers['preference-applied'], undefined)
    })
  })

  describe('compression', () => {
    it('compresses bodies of 1 KiB and more with br and gzip, byte-identical once decompressed', async () => {
      const plain = await get(`/posts/${id}`, { 'accept-encoding': 'identity' })
      assert.equal(plain.headers['content-encoding'], undefined)
      const br = await get(`/posts/${id}`, { 'accept-encoding': 'br' })
      assert.equal(br.headers['content-encoding'], 'br')
      assert.equal(brotliDecompressSync(br.rawPayload).toString(), plain.body)
      const gz = await get(`/posts/${id}`, { 'accept-encoding': 'gzip' })
      assert.equal(gz.headers['content-encoding'], 'gzip')
      assert.equal(gunzipSync(gz.rawPayload).toString(), plain.body)
      assert.match(String(br.headers.vary), /Accept-Encoding/i)
      assert.match(String(plain.headers.vary), /Accept-Encoding/i)
    })

    it('leaves small bodies alone', async () => {
      const res = await get('/healthz', { 'accept-encoding': 'br, gzip' })
      assert.equal(res.headers['content-encoding'], undefined)
    })
  })

  describe('OPTIONS', () => {
    it('answers 204 with Allow and, on a post, Accept-Patch', async () => {
      const res = await t.request({ method: 'OPTIONS', url: `/posts/${id}` })
      assert.equal(res.statusCode, 204)
      assert.deepEqual(String(res.headers.allow).split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'PUT'])
      assert.equal(res.headers['accept-patch'], 'application/merge-patch+json, application/json-patch+json')
      const coll = await t.request({ method: 'OPTIONS', url: '/posts' })
      assert.deepEqual(String(coll.headers.allow).split(', ').sort(), ['GET', 'HEAD', 'OPTIONS', 'POST'])
    })
  })
})

describe('version lifecycle', () => {
  it('warns with Deprecation, Sunset and Link on a deprecated version', async () => {
    const t = await buildTestApp('sqlite', { API_V1_DEPRECATED_AT: '2026-01-01T00:00:00Z', API_V1_SUNSET_AT: '2099-01-01T00:00:00Z' })
    const res = await t.request({ method: 'GET', url: '/posts' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.deprecation, `@${Date.parse('2026-01-01T00:00:00Z') / 1000}`)
    assert.equal(res.headers.sunset, new Date('2099-01-01T00:00:00Z').toUTCString())
    assert.match(String(res.headers.link), /<\/versions>; rel="deprecation"/)
    const v2 = await t.request({ method: 'GET', url: '/v2/posts' })
    assert.equal(v2.headers.deprecation, undefined)
    const versions = json(await t.request({ method: 'GET', url: '/versions' })).versions
    assert.equal(versions[0].deprecated, '2026-01-01T00:00:00.000Z')
    assert.equal(versions[1].sunset, null)
  })

  it('answers 410 VERSION_SUNSET after the sunset', async () => {
    const t = await buildTestApp('sqlite', { API_V1_DEPRECATED_AT: '2025-01-01T00:00:00Z', API_V1_SUNSET_AT: '2026-01-01T00:00:00Z' })
    const res = await t.request({ method: 'GET', url: '/v1/posts' })
    assert.equal(res.statusCode, 410)
    assert.equal(json(res).code, 'VERSION_SUNSET')
    assert.equal((await t.request({ method: 'GET', url: '/v2/posts' })).statusCode, 200)
    // Where clients learn what to use instead stays up.
    assert.equal((await t.request({ method: 'GET', url: '/v1/versions' })).statusCode, 200)
    assert.equal((await t.request({ method: 'GET', url: '/' })).statusCode, 200)
    const options = await t.request({ method: 'OPTIONS', url: '/v1/posts' })
    assert.equal(options.headers['api-version'], '1')
    assert.ok(options.headers.deprecation)
    const notAllowed = await t.request({ method: 'DELETE', url: '/v1/posts' })
    assert.equal(notAllowed.statusCode, 405)
    assert.ok(notAllowed.headers.sunset)
  })
})
