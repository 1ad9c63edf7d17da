import assert from 'node:assert/strict'
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib'
import { describe, it } from 'node:test'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

describe('compression (Accept-Encoding, Content-Encoding)', () => {
  let t: TestApp
  let alice: { authorization: string }
  let large: number
  let small: number
  before(async () => {
    t = await buildTestApp('sqlite')
    alice = await t.auth('alice')
    large = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Large', content: 'y'.repeat(2000) } })).id
    small = json(await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Small', content: 'short' } })).id
  })

  const get = (url: string, headers: Record<string, string> = {}) => t.request({ method: 'GET', url, headers })

  it('compresses a body of 1 KiB or more with br or gzip when asked, and says it varies', async () => {
    const plain = await get(`/posts/${large}`)
    assert.ok(plain.rawPayload.length >= 1024)
    const br = await get(`/posts/${large}`, { 'accept-encoding': 'gzip, deflate, br' })
    assert.equal(br.headers['content-encoding'], 'br')
    assert.equal(Number(br.headers['content-length']), br.rawPayload.length)
    assert.equal(brotliDecompressSync(br.rawPayload).toString(), plain.body)
    const gz = await get(`/posts/${large}`, { 'accept-encoding': 'gzip' })
    assert.equal(gz.headers['content-encoding'], 'gzip')
    assert.equal(gunzipSync(gz.rawPayload).toString(), plain.body)
    assert.match(String(gz.headers.vary), /accept-encoding/i)
    assert.equal(gz.headers.etag, plain.headers.etag)
  })

  it('sends a body under 1 KiB as it is, even when a coding is accepted', async () => {
    const res = await get(`/posts/${small}`, { 'accept-encoding': 'br, gzip' })
    assert.equal(res.statusCode, 200)
    assert.ok(res.rawPayload.length < 1024)
    assert.equal(res.headers['content-encoding'], undefined)
    assert.equal(json(res).content, 'short')
  })

  it('sends a large body as it is without Accept-Encoding, or when only identity is acceptable', async () => {
    const variants: Record<string, string>[] = [{}, { 'accept-encoding': 'identity' }, { 'accept-encoding': 'br;q=0, gzip;q=0' }]
    for (const headers of variants) {
      const res = await get(`/posts/${large}`, headers)
      assert.equal(res.headers['content-encoding'], undefined, JSON.stringify(headers))
      assert.equal(json(res).id, large)
    }
  })

  it('compresses non-JSON bodies too (the OpenAPI document, the /docs page assets)', async () => {
    const res = await get('/openapi.json', { 'accept-encoding': 'gzip' })
    assert.equal(res.headers['content-encoding'], 'gzip')
    assert.equal(JSON.parse(gunzipSync(res.rawPayload).toString()).openapi, '3.1.0')
  })

  it('decodes a request body sent gzip-encoded', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/posts',
      headers: { ...alice, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ title: 'Zipped', content: 'z' })),
    })
    assert.equal(res.statusCode, 201)
    assert.equal(json(res).title, 'Zipped')
  })

  it('answers 415 to a request body in a coding it does not know', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/posts',
      headers: { ...alice, 'content-type': 'application/json', 'content-encoding': 'compress' },
      payload: JSON.stringify({ title: 'LZW', content: 'z' }),
    })
    assert.equal(res.statusCode, 415)
    assert.equal(json(res).code, 'UNSUPPORTED_MEDIA_TYPE')
  })
})
