import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

type Headers = Record<string, string>

const MARKDOWN = '# Heading\n\n- one\n- **two**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>x()</script> [bad](javascript:alert(1)) https://example.com ~~gone~~'

for (const kind of await storeKinds()) {
  describe(`POST /render [${kind}]`, () => {
    let t: TestApp
    let writer: Headers
    let reader: Headers
    before(async () => {
      t = await buildTestApp(kind)
      writer = await t.auth('alice', ['posts:write'])
      reader = await t.auth('reader', [])
    })

    const render = async (payload: unknown, headers: Headers = writer, url = '/render') =>
      await t.request({ method: 'POST', url, headers, payload: payload as object })

    it('answers the HTML a post with that content holds as content_html, byte for byte', async () => {
      const post = json(await t.request({ method: 'POST', url: '/posts', headers: writer, payload: { title: 't', content: MARKDOWN } }))
      const res = await render({ content: MARKDOWN })
      assert.equal(res.statusCode, 200)
      assert.equal(json(res).html, post.content_html)
      assert.match(json(res).html, /<h1>Heading<\/h1>/)
      assert.match(json(res).html, /&lt;script&gt;/)
      assert.doesNotMatch(json(res).html, /href="javascript/)
      assert.equal(res.headers['cache-control'], 'private, no-store')
    })

    it('renders the service\'s own images with their variants, as a post holding them', async () => {
      const png = await sharp({ create: { width: 700, height: 350, channels: 3, background: '#3a6' } }).png().toBuffer()
      const upload = await t.request({ method: 'POST', url: '/media', headers: { ...writer, 'content-type': 'image/png' }, payload: png })
      assert.equal(upload.statusCode, 201)
      const markdown = `![A green field](/media/${json(upload).id}/file) and ![elsewhere](https://example.com/x.png)`
      const post = json(await t.request({ method: 'POST', url: '/posts', headers: writer, payload: { title: 'with an image', content: markdown } }))
      const res = await render({ content: markdown })
      assert.equal(json(res).html, post.content_html)
      assert.match(json(res).html, /srcset="\/media\/[^"]+\?w=320 320w, \/media\/[^"]+\?w=640 640w" sizes="[^"]+" width="700" height="350"/)
      assert.match(json(res).html, /<img src="https:\/\/example\.com\/x\.png" alt="elsewhere">/)
    })

    it('takes any valid credential, also under a version prefix; none is 401, a bad one 401 invalid_token', async () => {
      assert.equal((await render({ content: '*a*' }, reader)).statusCode, 200)
      assert.equal(json(await render({ content: '*a*' }, reader, '/v2/render')).html, '<p><em>a</em></p>\n')
      const anonymous = await render({ content: 'a' }, {})
      assert.equal(anonymous.statusCode, 401)
      assert.match(String(anonymous.headers['www-authenticate']), /^Bearer realm=/)
      const bad = await render({ content: 'a' }, { authorization: 'Bearer nope' })
      assert.equal(bad.statusCode, 401)
      assert.match(String(bad.headers['www-authenticate']), /invalid_token/)
    })

    it('takes content of 100 000 characters and refuses 100 001 with 422', async () => {
      assert.equal((await render({ content: 'a'.repeat(100_000) })).statusCode, 200)
      const over = await render({ content: 'a'.repeat(100_001) })
      assert.equal(over.statusCode, 422)
      assert.equal(json(over).errors[0].field, 'content')
    })

    it('refuses a body without content, with another member, or not JSON', async () => {
      assert.equal((await render({})).statusCode, 422)
      const unknown = await render({ content: '', title: 'x' })
      assert.equal(unknown.statusCode, 422)
      assert.ok(json(unknown).errors.some((e: { code: string }) => e.code === 'UNKNOWN_FIELD'))
      const malformed = await t.request({ method: 'POST', url: '/render', headers: { ...writer, 'content-type': 'application/json' }, payload: '{"content":' })
      assert.equal(malformed.statusCode, 400)
      assert.equal(json(malformed).code, 'MALFORMED_JSON')
      const text = await t.request({ method: 'POST', url: '/render', headers: { ...writer, 'content-type': 'text/plain' }, payload: '# x' })
      assert.equal(text.statusCode, 415)
    })
  })
}
