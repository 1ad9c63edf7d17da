import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { png } from './images.ts'
import { before } from '../../support/hooks.ts'

/** PostgreSQL text holds no NUL: every way one can reach a media's text is refused or cleaned, never a 500. */
for (const kind of await storeKinds()) {
  describe(`media text with NUL [${kind}]`, () => {
    let t: TestApp
    let alice: Record<string, string>
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice', ['media:write'])
    })

    it('refuses a search for NUL with 422, and takes the same search without it', async () => {
      const bad = await t.request({ method: 'GET', url: '/media?q=a%00b', headers: alice })
      assert.equal(bad.statusCode, 422, bad.body)
      assert.equal(json(bad).errors[0].field, 'q')
      assert.equal((await t.request({ method: 'GET', url: '/media?q=ab', headers: alice })).statusCode, 200)
    })

    it('refuses a form whose alt or caption holds NUL with 422 naming the part, and records nothing', async () => {
      const image = await png(20, 20)
      for (const field of ['alt', 'caption']) {
        const boundary = '----nul-boundary'
        const payload = Buffer.concat([
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
          image,
          Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\n\r\nx\u0000y\r\n--${boundary}--\r\n`),
        ])
        const res = await t.request({ method: 'POST', url: '/media', headers: { ...alice, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
        assert.equal(res.statusCode, 422, res.body)
        assert.deepEqual(json(res).errors.map((e: { field: string, code: string }) => [e.field, e.code]), [[field, 'INVALID_FORMAT']])
      }
      assert.deepEqual(json(await t.request({ method: 'GET', url: '/media', headers: alice })), [])
    })

    it('keeps a resumable upload whose alt holds NUL, with the NUL left out', async () => {
      const image = await png(20, 20)
      const metadata = `filename ${Buffer.from('a.png').toString('base64')},alt ${Buffer.from('x\u0000y').toString('base64')}`
      const created = await t.app.inject({ method: 'POST', url: '/uploads', headers: { ...alice, 'tus-resumable': '1.0.0', 'upload-length': String(image.length), 'upload-metadata': metadata } })
      assert.equal(created.statusCode, 201, created.body)
      const path = new URL(String(created.headers.location), 'http://x').pathname
      const done = await t.app.inject({ method: 'PATCH', url: path, headers: { ...alice, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, payload: image })
      assert.equal(done.statusCode, 204, done.body)
      const media = json(await t.request({ method: 'GET', url: String(done.headers['media-location']), headers: alice }))
      assert.equal(media.alt, 'xy')
    })
  })
}
