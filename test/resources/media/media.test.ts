import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { rawRequest } from '../../raw-http.ts'
import { sweepOnce } from '../../../src/resources/media/sweep.ts'
import { lyingPng, png, sidewaysJpeg, SVG } from './images.ts'
import { before } from '../../support/hooks.ts'

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

function blobFiles (t: TestApp): string[] {
  const dir = path.join(t.config.dataDir, 'media')
  const out: string[] = []
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name === '.tmp') continue
      if (e.isDirectory()) walk(path.join(d, e.name))
      else out.push(path.join(d, e.name))
    }
  }
  if (fs.existsSync(dir)) walk(dir)
  return out
}

function multipartBody (parts: { name: string, filename?: string, type?: string, data: Buffer | string }[]): { payload: Buffer, headers: Record<string, string> } {
  const boundary = '----media-test-boundary'
  const chunks: Buffer[] = []
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type !== undefined ? `Content-Type: ${p.type}\r\n` : ''}\r\n`))
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

for (const kind of await storeKinds()) {
  describe(`media (${kind})`, () => {
    let t: TestApp
    let alice: Record<string, string>
    let jpeg: Buffer
    before(async () => {
      t = await buildTestApp(kind, { MEDIA_MAX_PIXELS: '1000000' })
      alice = await t.auth('alice', ['media:write'])
      jpeg = await sidewaysJpeg()
    })

    const upload = async (body: Buffer, type: string, headers: Record<string, string> = alice) =>
      await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': type }, payload: body })

    describe('POST /media', () => {
      it('stores the image as seen, without its metadata, and answers 201 with Location', async () => {
        const res = await upload(jpeg, 'image/jpeg', { ...alice, 'content-disposition': 'attachment; filename="../../etc/holiday.jpg"' })
        assert.equal(res.statusCode, 201, res.body)
        const m = json(res)
        assert.equal(res.headers.location, `/media/${m.id as string}`)
        assert.match(m.id, /^[A-Za-z0-9_-]{22}$/)
        assert.equal(m.filename, 'holiday.jpg', 'no path survives')
        assert.equal(m.content_type, 'image/jpeg')
        assert.deepEqual([m.width, m.height], [300, 400], 'the EXIF orientation (6: turned a quarter) is applied')
        assert.equal(m.author, 'alice')
        assert.ok(m.placeholder.startsWith('data:image/png;base64,') && m.placeholder.length <= 2000, m.placeholder.length)
        const file = await t.request({ method: 'GET', url: `/media/${m.id as string}/file` })
        assert.equal(file.statusCode, 200)
        assert.equal(sha(file.rawPayload), m.sha256)
        assert.equal(file.rawPayload.length, m.bytes)
        const meta = await sharp(file.rawPayload).metadata()
        assert.equal(meta.exif, undefined, 'no EXIF (and so no GPS) is served')
        assert.equal(meta.orientation, undefined)
        assert.deepEqual([meta.width, meta.height], [300, 400])
      })

      it('gives the same stored bytes for the same upload, kept once', async () => {
        const a = json(await upload(jpeg, 'image/jpeg'))
        const before = blobFiles(t).length
        const b = json(await upload(jpeg, 'image/jpeg'))
        assert.notEqual(a.id, b.id)
        assert.equal(a.sha256, b.sha256, 'deterministic processing')
        assert.equal(blobFiles(t).length, before, 'identical bytes are stored once')
      })

      it('takes a form with one file, alt and caption', async () => {
        const form = multipartBody([{ name: 'file', filename: 'a\u202Egnp.jpg', type: 'image/png', data: await png() }, { name: 'alt', data: 'A blue square' }, { name: 'caption', data: 'Blue' }])
        const res = await t.request({ method: 'POST', url: '/media', headers: { ...alice, ...form.headers }, payload: form.payload })
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(json(res).alt, 'A blue square')
        assert.equal(json(res).caption, 'Blue')
        assert.equal(json(res).filename, 'agnp.jpg', 'the right-to-left override is dropped')
        assert.equal(json(res).content_type, 'image/png')
      })

      it('refuses a form with two files or none (422)', async () => {
        const two = multipartBody([{ name: 'file', filename: 'a.png', type: 'image/png', data: await png() }, { name: 'file', filename: 'b.png', type: 'image/png', data: await png() }])
        const res2 = await t.request({ method: 'POST', url: '/media', headers: { ...alice, ...two.headers }, payload: two.payload })
        assert.equal(res2.statusCode, 422, res2.body)
        const none = multipartBody([{ name: 'alt', data: 'nothing' }])
        const res0 = await t.request({ method: 'POST', url: '/media', headers: { ...alice, ...none.headers }, payload: none.payload })
        assert.equal(res0.statusCode, 422, res0.body)
        assert.equal(json(res0).errors[0].field, 'file')
      })

      for (const [name, body, type] of [
        ['SVG', SVG, 'image/svg+xml'],
        ['SVG declared as PNG', SVG, 'image/png'],
        ['text named .png', Buffer.from('just some text, honest'), 'image/png'],
        ['zero bytes', Buffer.alloc(0), 'image/png'],
      ] as const) {
        it(`refuses ${name} with 415`, async () => {
          const res = await upload(body, type)
          assert.equal(res.statusCode, 415, res.body)
          assert.equal(json(res).code, 'UNSUPPORTED_MEDIA_TYPE')
        })
      }

      it('refuses a POST with no body and no Content-Type as an empty file (415), never a 500', async () => {
        const res = await t.request({ method: 'POST', url: '/media', headers: alice })
        assert.equal(res.statusCode, 415, res.body)
        assert.equal(json(res).code, 'UNSUPPORTED_MEDIA_TYPE')
      })

      it('refuses a declared type that disagrees with the bytes (415)', async () => {
        const res = await upload(await png(), 'image/jpeg')
        assert.equal(res.statusCode, 415)
      })

      it('stores only the image of an HTML/JPEG polyglot', async () => {
        const polyglot = Buffer.concat([jpeg, Buffer.from('<html><script>alert(1)</script></html>')])
        const res = await upload(polyglot, 'image/jpeg')
        assert.equal(res.statusCode, 201, res.body)
        const file = await t.request({ method: 'GET', url: `/media/${json(res).id as string}/file` })
        assert.ok(!file.rawPayload.includes('<script>'), 'the trailing HTML is not kept')
      })

      it('refuses truncated and corrupt files with 422 IMAGE_UNREADABLE', async () => {
        const truncated = await upload(jpeg.subarray(0, Math.floor(jpeg.length / 2)), 'image/jpeg')
        assert.equal(truncated.statusCode, 422, truncated.body)
        assert.equal(json(truncated).code, 'IMAGE_UNREADABLE')
        const p = await png()
        const corrupt = Buffer.from(p)
        for (let i = 40; i < corrupt.length - 12; i++) corrupt[i] = 0x55
        const res = await upload(corrupt, 'image/png')
        assert.equal(res.statusCode, 422, res.body)
      })

      it('refuses a 1×1 PNG declaring 100 000 × 100 000 pixels before decoding, within a second', async () => {
        const started = performance.now()
        const res = await upload(await lyingPng(100_000, 100_000), 'image/png')
        assert.equal(res.statusCode, 422)
        assert.equal(json(res).code, 'IMAGE_UNREADABLE')
        assert.match(json(res).detail, /10000000000 pixels/)
        assert.ok(performance.now() - started < 1000)
      })

      it('takes MEDIA_MAX_PIXELS and refuses one more', async () => {
        assert.equal((await upload(await png(1000, 1000), 'image/png')).statusCode, 201)
        const over = await upload(await png(1000, 1001), 'image/png')
        assert.equal(over.statusCode, 422)
      })

      it('binds an Idempotency-Key to the bytes: the same upload replays, other bytes are 422', async () => {
        const keyed = { ...alice, 'idempotency-key': 'upload-once' }
        const first = await upload(await png(12, 12), 'image/png', keyed)
        assert.equal(first.statusCode, 201)
        const again = await upload(await png(12, 12), 'image/png', keyed)
        assert.equal(again.statusCode, 201)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(json(again).id, json(first).id)
        const other = await upload(await png(13, 12), 'image/png', keyed)
        assert.equal(other.statusCode, 422)
        assert.equal(json(other).code, 'IDEMPOTENCY_KEY_REUSED')
      })

      it('needs media:write, posts:write or admin', async () => {
        assert.equal((await upload(jpeg, 'image/jpeg', {})).statusCode, 401)
        assert.equal((await upload(jpeg, 'image/jpeg', await t.auth('bob', ['orders:write']))).statusCode, 403)
        assert.equal((await upload(jpeg, 'image/jpeg', await t.auth('bob', ['posts:write']))).statusCode, 201)
      })
    })

    describe('reading, changing and deleting', () => {
      it('lists the caller\'s media newest first, q on filename, alt and caption; others see 404', async () => {
        const carol = await t.auth('carol', ['media:write'])
        const form = multipartBody([{ name: 'file', filename: 'sunset.png', type: 'image/png', data: await png(30, 20) }, { name: 'alt', data: 'Evening sky' }])
        const made = json(await t.request({ method: 'POST', url: '/media', headers: { ...carol, ...form.headers }, payload: form.payload }))
        const second = json(await upload(await png(31, 20), 'image/png', carol))
        const list = await t.request({ method: 'GET', url: '/media', headers: carol })
        assert.equal(list.statusCode, 200)
        assert.deepEqual(json(list).map((m: { id: string }) => m.id), [second.id, made.id])
        const found = await t.request({ method: 'GET', url: '/media?q=EVENING', headers: carol })
        assert.deepEqual(json(found).map((m: { id: string }) => m.id), [made.id])
        assert.equal((await t.request({ method: 'GET', url: `/media/${made.id as string}`, headers: alice })).statusCode, 404)
        assert.equal((await t.request({ method: 'GET', url: `/media/${made.id as string}`, headers: await t.auth('root', ['admin']) })).statusCode, 200)
        const v2 = await t.request({ method: 'GET', url: `/v2/media/${made.id as string}`, headers: carol })
        assert.equal(json(v2).mediaId, made.id)
      })

      it('merge-patches alt, caption and filename, refusing unsafe names', async () => {
        const m = json(await upload(await png(), 'image/png'))
        const patch = async (body: unknown) => await t.request({ method: 'PATCH', url: `/media/${m.id as string}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify(body) })
        const ok = await patch({ alt: 'A square', caption: 'c', filename: 'square.png' })
        assert.equal(ok.statusCode, 200, ok.body)
        assert.equal(json(ok).alt, 'A square')
        for (const filename of ['a/b.png', 'a\\b.png', 'a\u0000b', 'a\u0007b', 'x\u202Eb', '']) {
          const bad = await patch({ filename })
          assert.equal(bad.statusCode, 422, JSON.stringify(filename))
        }
        assert.equal((await patch({ alt: 'x'.repeat(500) })).statusCode, 200)
        assert.equal((await patch({ alt: 'x'.repeat(501) })).statusCode, 422)
        assert.equal((await patch({ caption: 'x'.repeat(1001) })).statusCode, 422)
        assert.equal((await patch({ width: 3 })).statusCode, 422)
        assert.equal((await patch({ alt: null })).statusCode, 200)
      })

      it('deletes: 204, its URLs answer 404 at once, and a sweep removes bytes no media holds', async () => {
        const bytes = await png(77, 33)
        const m = json(await upload(bytes, 'image/png'))
        assert.equal((await t.request({ method: 'GET', url: `/media/${m.id as string}/image?w=320&format=webp` })).statusCode, 200)
        const files = blobFiles(t).length
        const del = await t.request({ method: 'DELETE', url: `/media/${m.id as string}`, headers: alice })
        assert.equal(del.statusCode, 204)
        assert.equal((await t.request({ method: 'GET', url: `/media/${m.id as string}/file` })).statusCode, 404)
        assert.equal((await t.request({ method: 'GET', url: `/media/${m.id as string}/image` })).statusCode, 404)
        const removed = await sweepOnce(t.store, t.context.services.mediaLibrary)
        assert.equal(removed, 2, 'the file and its variant')
        assert.equal(blobFiles(t).length, files - 2)
        assert.equal(await sweepOnce(t.store, t.context.services.mediaLibrary), 0, 'what media hold stays')
      })
    })

    describe('GET /media/{id}/file and /image', () => {
      let m: { id: string, sha256: string, bytes: number, width: number }
      before(async () => { m = json(await upload(await sidewaysJpeg(1200, 800), 'image/jpeg')) })

      it('serves the file publicly, immutable, with a strong ETag, 304, nosniff and ranges', async () => {
        const res = await t.request({ method: 'GET', url: `/media/${m.id}/file` })
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable')
        assert.equal(res.headers.etag, `"${m.sha256}"`)
        assert.equal(res.headers['x-content-type-options'], 'nosniff')
        assert.equal(res.headers['content-type'], 'image/jpeg')
        const again = await t.request({ method: 'GET', url: `/media/${m.id}/file`, headers: { 'if-none-match': `"${m.sha256}"` } })
        assert.equal(again.statusCode, 304)
        const part = await t.request({ method: 'GET', url: `/media/${m.id}/file`, headers: { range: 'bytes=0-99' } })
        assert.equal(part.statusCode, 206)
        assert.equal(part.rawPayload.length, 100)
        assert.deepEqual(part.rawPayload, res.rawPayload.subarray(0, 100))
        const past = await t.request({ method: 'GET', url: `/media/${m.id}/file`, headers: { range: `bytes=${m.bytes}-` } })
        assert.equal(past.statusCode, 416)
        assert.equal((await t.request({ method: 'GET', url: '/media/AAAAAAAAAAAAAAAAAAAAAA/file' })).statusCode, 404)
        assert.equal((await t.request({ method: 'GET', url: `/v2/media/${m.id}/file` })).statusCode, 200)
      })

      it('makes variants of the allowed widths and formats, decoded to that width', async () => {
        const res = await t.request({ method: 'GET', url: `/media/${m.id}/image?w=640&format=webp` })
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(res.headers['content-type'], 'image/webp')
        assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable')
        const meta = await sharp(res.rawPayload).metadata()
        assert.deepEqual([meta.format, meta.width], ['webp', 640])
        assert.equal(res.headers.etag, `"${sha(res.rawPayload)}"`)
        const wider = await t.request({ method: 'GET', url: `/media/${m.id}/image?w=2560&format=png` })
        assert.equal((await sharp(wider.rawPayload).metadata()).width, m.width, 'never wider than the original')
        const cached = await t.request({ method: 'GET', url: `/media/${m.id}/image?w=640&format=webp`, headers: { 'if-none-match': res.headers.etag as string } })
        assert.equal(cached.statusCode, 304)
      })

      it('chooses AVIF or WebP by Accept for format=auto, with Vary: Accept', async () => {
        const avif = await t.request({ method: 'GET', url: `/media/${m.id}/image?w=320`, headers: { accept: 'image/avif,image/webp,*/*' } })
        assert.equal(avif.statusCode, 200, avif.body)
        assert.equal(avif.headers['content-type'], 'image/avif')
        assert.match(String(avif.headers.vary), /Accept/)
        const webp = await t.request({ method: 'GET', url: `/media/${m.id}/image?w=320&format=auto`, headers: { accept: 'image/webp,*/*' } })
        assert.equal(webp.headers['content-type'], 'image/webp')
        const plain = await t.request({ method: 'GET', url: `/media/${m.id}/image?w=320` })
        assert.equal(plain.headers['content-type'], 'image/jpeg')
      })

      for (const query of ['w=100', 'w=321', 'w=abc', 'q=29', 'q=96', 'format=gif', 'format=tiff', 'blur=3', 'w=320&w=640']) {
        it(`refuses ${query} with 422`, async () => {
          const res = await t.request({ method: 'GET', url: `/media/${m.id}/image?${query}` })
          assert.equal(res.statusCode, 422, res.body)
        })
      }

      it('takes q=30 and q=95', async () => {
        for (const q of [30, 95]) assert.equal((await t.request({ method: 'GET', url: `/media/${m.id}/image?w=320&format=jpeg&q=${q}` })).statusCode, 200)
      })

      it('computes a variant once for concurrent first requests', async () => {
        const before = await t.scrape()
        const count = (text: string) => Number(/media_variant_computations_total (\d+)/.exec(text)?.[1] ?? 0)
        const answers = await Promise.all(Array.from({ length: 10 }, async () => await t.request({ method: 'GET', url: `/media/${m.id}/image?w=960&format=webp&q=60` })))
        assert.ok(answers.every(a => a.statusCode === 200))
        assert.equal(new Set(answers.map(a => a.headers.etag)).size, 1)
        assert.equal(count(await t.scrape()) - count(before), 1)
      })
    })
  })
}

describe('media limits (sqlite)', () => {
  let t: TestApp
  let image: Buffer
  before(async () => {
    image = await png(40, 30)
    t = await buildTestApp('sqlite', { MEDIA_MAX_BYTES: String(Math.max(1024, image.length)) })
  })

  it('takes a body of MEDIA_MAX_BYTES and refuses one byte more with 413, the form too', async () => {
    const max = t.config.media.maxBytes
    const exact = Buffer.concat([image, Buffer.alloc(max - image.length)])
    const headers = { ...(await t.auth('alice', ['media:write'])), 'content-type': 'image/png' }
    const ok = await t.request({ method: 'POST', url: '/media', headers, payload: exact })
    assert.equal(ok.statusCode, 201, ok.body)
    const over = await t.request({ method: 'POST', url: '/media', headers, payload: Buffer.concat([exact, Buffer.alloc(1)]) })
    assert.equal(over.statusCode, 413)
    assert.equal(json(over).code, 'PAYLOAD_TOO_LARGE')
    const form = multipartBody([{ name: 'file', filename: 'big.png', type: 'image/png', data: Buffer.concat([exact, Buffer.alloc(1)]) }])
    const formOver = await t.request({ method: 'POST', url: '/media', headers: { ...headers, ...form.headers }, payload: form.payload })
    assert.equal(formOver.statusCode, 413, formOver.body)
  })

  it('leaves nothing recorded when an upload dies between its bytes and its row, and the sweep removes them once the claim expires', async () => {
    const library = t.context.services.mediaLibrary
    const blobs = await library.blobs
    // What an instance that crashed after writing the bytes leaves: the blob, and a claim that has run out.
    await t.store.media.claimBlob('crashed', 'ab/ab00', new Date(Date.now() - 1))
    await blobs.put('ab/ab00', Buffer.from('half an upload'), { contentType: 'image/png' })
    // A live claim (an upload in progress) keeps its blob.
    await t.store.media.claimBlob('running', 'cd/cd00', new Date(Date.now() + 60_000))
    await blobs.put('cd/cd00', Buffer.from('being written'), { contentType: 'image/png' })
    assert.equal(await sweepOnce(t.store, library), 1)
    assert.equal(await blobs.stat('ab/ab00'), null)
    assert.deepEqual(await blobs.stat('cd/cd00'), { bytes: 13 })
  })
})

describe('media uploads that stall or lie (sqlite, over a socket)', () => {
  let t: TestApp
  let port: number
  let authorization: string
  before(async () => {
    t = await buildTestApp('sqlite', { REQUEST_TIMEOUT_MS: '800' })
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    port = (t.app.server.address() as AddressInfo).port
    authorization = (await t.auth('alice', ['media:write'])).authorization
  })

  const head = (length: number) => `POST /media HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: image/png\r\nContent-Length: ${length}\r\n\r\n`

  it('answers an upload that stalls at its deadline, and records nothing', async () => {
    const image = await png()
    const res = await rawRequest(port, [head(image.length), image.subarray(0, 20)], { timeoutMs: 5000, untilAnswer: true })
    assert.ok(res.status === 408 || res.status === 503, `${res.status}`)
    const list = await t.request({ method: 'GET', url: '/media', headers: { authorization } })
    assert.deepEqual(json(list), [])
    assert.equal(blobFiles(t).length, 0, 'no bytes kept')
  })

  it('answers a Content-Length that says less than the body with a problem, and records nothing', async () => {
    const image = await png()
    const res = await rawRequest(port, [head(30), image], { timeoutMs: 5000, untilAnswer: true })
    // The first 30 bytes are a truncated image (422); the rest is read as a next request that is no HTTP (400).
    assert.ok(res.status === 400 || res.status === 422, res.body)
    assert.equal(res.headers['content-type'], 'application/problem+json')
    assert.deepEqual(json(await t.request({ method: 'GET', url: '/media', headers: { authorization } })), [])
  })
})

describe('a chunked upload past MEDIA_MAX_BYTES (sqlite, over a socket)', () => {
  const MAX = 65_536
  let t: TestApp
  let port: number
  let authorization: string
  before(async () => {
    t = await buildTestApp('sqlite', { MEDIA_MAX_BYTES: String(MAX) })
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    port = (t.app.server.address() as AddressInfo).port
    authorization = (await t.auth('alice', ['media:write'])).authorization
  })

  const head = () => `POST /media HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n`
  const chunk = (bytes: Buffer) => Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')])

  it('is told 413 as soon as the bytes pass the limit, though its last chunk never comes, and the connection then closes', async () => {
    const image = await png()
    const filler = Buffer.alloc(16_384)
    // Past the limit by a chunk, and then silence: no terminating zero-length chunk.
    const parts = [head(), chunk(image), ...Array.from({ length: MAX / filler.length + 1 }, () => chunk(filler))]
    const res = await rawRequest(port, parts, { timeoutMs: 8000 })
    assert.equal(res.status, 413, res.body)
    assert.equal(res.headers['content-type'], 'application/problem+json')
    assert.equal(res.headers.connection, 'close')
    assert.equal(JSON.parse(res.body).code, 'PAYLOAD_TOO_LARGE')
    assert.ok(res.closedAfterMs < 5000, `closed after ${Math.round(res.closedAfterMs)} ms`)
    assert.deepEqual(json(await t.request({ method: 'GET', url: '/media', headers: { authorization } })), [])
  })

  it('takes a chunked upload of exactly MEDIA_MAX_BYTES', async () => {
    const image = await png()
    const body = Buffer.concat([image, Buffer.alloc(MAX - image.length)])
    const res = await rawRequest(port, [head(), chunk(body.subarray(0, 40_000)), chunk(body.subarray(40_000)), '0\r\n\r\n'], { timeoutMs: 8000, untilAnswer: true })
    assert.equal(res.status, 201, res.body)
  })
})
