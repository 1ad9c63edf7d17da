import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import * as tus from 'tus-js-client'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { noisyJpeg } from './images.ts'
import { before } from '../../support/hooks.ts'

interface Seen { method: string, offset: string | null, status?: number, mediaLocation?: string | null }

/** Runs a tus upload to its end (or its abort), recording each request and answer. */
async function run (upload: tus.Upload): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    upload.options.onSuccess = () => { resolve() }
    upload.options.onError = err => { reject(err) }
    upload.start()
  })
}

for (const kind of await storeKinds()) {
  describe(`tus uploads at /uploads (${kind})`, () => {
    let t: TestApp
    let base: string
    let headers: Record<string, string>
    before(async () => {
      t = await buildTestApp(kind)
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
      headers = await t.auth('alice', ['media:write'])
    })

    it('tus-js-client uploads, is interrupted, and resumes from the offset the service reports; the last PATCH answers 204 with Media-Location', async () => {
      const file = await noisyJpeg(300, 200)
      assert.ok(file.length > 40_000, String(file.length))
      const chunkSize = 16 * 1024
      const seen: Seen[] = []
      const options = (extra: Partial<tus.UploadOptions>): tus.UploadOptions => ({
        endpoint: `${base}/uploads`,
        headers,
        chunkSize,
        retryDelays: [],
        metadata: { filename: 'resumed.jpg', alt: 'Sideways' },
        onBeforeRequest: req => { seen.push({ method: req.getMethod(), offset: req.getHeader('Upload-Offset') ?? null }) },
        onAfterResponse: (_req, res) => { seen.at(-1)!.status = res.getStatus(); seen.at(-1)!.mediaLocation = res.getHeader('Media-Location') ?? null },
        ...extra,
      })
      // The first client stops after two chunks, as a dropped connection would.
      let first: tus.Upload
      await new Promise<void>((resolve, reject) => {
        let chunks = 0
        first = new tus.Upload(file, options({
          onChunkComplete: () => { if (++chunks === 2) first.abort().then(() => { resolve() }, reject) },
          onError: reject,
          onSuccess: () => { reject(new Error('should have been interrupted')) },
        }))
        first.start()
      })
      const url = first!.url!
      assert.match(url, /\/uploads\/[0-9a-f]{32}$/)
      const head = await fetch(url, { method: 'HEAD', headers: { ...headers, 'tus-resumable': '1.0.0' } })
      assert.equal(head.status, 200)
      const held = Number(head.headers.get('upload-offset'))
      assert.equal(held, 2 * chunkSize)
      // Someone else cannot see it.
      const other = await fetch(url, { method: 'HEAD', headers: { ...(await t.auth('mallory', ['media:write'])), 'tus-resumable': '1.0.0' } })
      assert.equal(other.status, 404)

      seen.length = 0
      const second = new tus.Upload(file, options({ uploadUrl: url }))
      await run(second)
      assert.equal(seen[0]!.method, 'HEAD', 'the client asks where to resume')
      const patches = seen.filter(s => s.method === 'PATCH')
      assert.equal(patches[0]!.offset, String(held), 'and resumes from the offset the service reported')
      const last = patches.at(-1)!
      assert.equal(last.status, 204)
      assert.match(last.mediaLocation ?? '', /^\/media\/[A-Za-z0-9_-]{22}$/)
      const media = await t.request({ method: 'GET', url: last.mediaLocation!, headers })
      assert.equal(media.statusCode, 200)
      assert.equal(json(media).filename, 'resumed.jpg')
      assert.equal(json(media).alt, 'Sideways')
      assert.deepEqual([json(media).width, json(media).height], [200, 300], 'processed as a direct upload')
      const stored = await t.request({ method: 'GET', url: `${last.mediaLocation!}/file` })
      assert.equal((await sharp(stored.rawPayload).metadata()).exif, undefined)
      const gone = await fetch(url, { method: 'HEAD', headers: { ...headers, 'tus-resumable': '1.0.0' } })
      assert.ok(gone.status === 404 || gone.status === 410, String(gone.status))
    })

    it('refuses a PATCH at the wrong offset (409), past Upload-Length, after termination, without Tus-Resumable and without a credential, each a problem', async () => {
      const made = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': '10' } })
      assert.equal(made.status, 201)
      const url = new URL(made.headers.get('location')!, base).toString()
      const patch = async (offset: number, body: Buffer, h = headers) => await fetch(url, { method: 'PATCH', headers: { ...h, 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body })
      const wrong = await patch(3, Buffer.from('abc'))
      assert.equal(wrong.status, 409)
      assert.equal(wrong.headers.get('content-type'), 'application/problem+json')
      assert.equal((await wrong.json() as { code: string }).code, 'CONFLICT')
      const past = await patch(0, Buffer.alloc(11))
      assert.ok(past.status === 413 || past.status === 400, String(past.status))
      assert.equal(past.headers.get('content-type'), 'application/problem+json')
      assert.equal((await fetch(url, { method: 'DELETE', headers: { ...headers, 'tus-resumable': '1.0.0' } })).status, 204)
      const after = await patch(0, Buffer.from('abc'))
      assert.equal(after.status, 404)
      assert.equal((await after.json() as { code: string }).code, 'UPLOAD_NOT_FOUND')
      const bare = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'upload-length': '10' } })
      assert.equal(bare.status, 412, 'no Tus-Resumable')
      assert.equal((await bare.json() as { code: string }).code, 'PRECONDITION_FAILED')
      const anonymous = await fetch(`${base}/uploads`, { method: 'POST', headers: { 'tus-resumable': '1.0.0', 'upload-length': '10' } })
      assert.equal(anonymous.status, 401)
      const big = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': String(t.config.media.maxBytes + 1) } })
      assert.equal(big.status, 413)
    })

    it('refuses what POST /media refuses when the last byte arrives, keeping nothing', async () => {
      const text = Buffer.from('not an image at all')
      const made = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': String(text.length) } })
      const url = new URL(made.headers.get('location')!, base).toString()
      const res = await fetch(url, { method: 'PATCH', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: text })
      assert.equal(res.status, 415)
      assert.equal((await res.json() as { code: string }).code, 'UNSUPPORTED_MEDIA_TYPE')
      const list = await t.request({ method: 'GET', url: '/media', headers: await t.auth('nobody-else', ['media:write']) })
      assert.deepEqual(json(list), [])
    })

    it('takes an empty Upload-Metadata as no metadata, from fetch and from tus-js-client', async () => {
      const made = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-metadata': '' } })
      assert.equal(made.status, 201, await made.text())
      assert.match(made.headers.get('location') ?? '', /^\/uploads\/[0-9a-f]{32}$/)
      const file = await noisyJpeg(60, 40)
      let created: number | undefined
      const upload = new tus.Upload(file, {
        endpoint: `${base}/uploads`,
        headers,
        retryDelays: [],
        onBeforeRequest: req => { if (req.getMethod() === 'POST') req.setHeader('Upload-Metadata', '') },
        onAfterResponse: (req, res) => { if (req.getMethod() === 'POST') created = res.getStatus() },
      })
      await run(upload)
      assert.equal(created, 201)
      // A metadata that is there but broken is still refused.
      const broken = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-metadata': 'filename not-base64!' } })
      assert.equal(broken.status, 400)
      assert.equal(broken.headers.get('content-type'), 'application/problem+json')
    })

    it('answers OPTIONS on both paths with Tus-Resumable, Tus-Version, Tus-Extension and Tus-Max-Size', async () => {
      const made = await fetch(`${base}/uploads`, { method: 'POST', headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': '10' } })
      for (const url of [`${base}/uploads`, new URL(made.headers.get('location')!, base).toString()]) {
        for (const extra of [{}, headers]) {
          const res = await fetch(url, { method: 'OPTIONS', headers: extra })
          assert.equal(res.status, 204)
          assert.equal(res.headers.get('tus-resumable'), '1.0.0')
          assert.equal(res.headers.get('tus-version'), '1.0.0')
          assert.equal(res.headers.get('tus-extension'), 'creation,termination,expiration')
          assert.equal(res.headers.get('tus-max-size'), String(t.config.media.maxBytes))
        }
      }
    })
  })
}
