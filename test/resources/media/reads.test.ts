import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import { ConfigError } from '../../../src/config.ts'
import { loadConfig } from '../../../src/context.ts'
import { SMALL_BLOB_BYTES } from '../../../src/resources/media/library.ts'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { png } from './images.ts'
import { before } from '../../support/hooks.ts'

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

/** The file that holds the blob of `sha256` under the app's DATA_DIR. */
function blobFile (t: TestApp, sha256: string): string {
  return path.join(t.config.dataDir, 'media', sha256.slice(0, 2), sha256)
}

/** A PNG of noise: it does not compress, so `w` × `h` × 3 bytes and more. */
async function noisePng (w: number, h: number): Promise<Buffer> {
  return await sharp(randomBytes(w * h * 3), { raw: { width: w, height: h, channels: 3 } }).png().toBuffer()
}

async function uploaded (t: TestApp, bytes: Buffer): Promise<{ id: string, sha256: string, bytes: number }> {
  const headers = { ...(await t.auth('alice', ['media:write'])), 'content-type': 'image/png' }
  const res = await t.request({ method: 'POST', url: '/media', headers, payload: bytes })
  assert.equal(res.statusCode, 201, res.body)
  return json(res)
}

describe('media reads (sqlite)', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite') })

  it('keeps a small file in memory once read: served whole and in part without the storage, 404 at once when deleted', async () => {
    const m = await uploaded(t, await png(64, 48))
    const first = await t.request({ method: 'GET', url: `/media/${m.id}/file` })
    assert.equal(first.statusCode, 200)
    fs.rmSync(blobFile(t, m.sha256))
    const again = await t.request({ method: 'GET', url: `/media/${m.id}/file` })
    assert.equal(again.statusCode, 200)
    assert.deepEqual(again.rawPayload, first.rawPayload)
    const part = await t.request({ method: 'GET', url: `/media/${m.id}/file`, headers: { range: 'bytes=10-19' } })
    assert.equal(part.statusCode, 206)
    assert.equal(part.headers['content-range'], `bytes 10-19/${m.bytes}`)
    assert.deepEqual(part.rawPayload, first.rawPayload.subarray(10, 20))
    const del = await t.request({ method: 'DELETE', url: `/media/${m.id}`, headers: await t.auth('alice', ['media:write']) })
    assert.equal(del.statusCode, 204)
    assert.equal((await t.request({ method: 'GET', url: `/media/${m.id}/file` })).statusCode, 404)
  })

  it(`streams a file over ${SMALL_BLOB_BYTES} bytes from the storage, whole and in part`, async () => {
    const m = await uploaded(t, await noisePng(800, 600))
    assert.ok(m.bytes > SMALL_BLOB_BYTES, `${m.bytes} bytes`)
    const whole = await t.request({ method: 'GET', url: `/media/${m.id}/file` })
    assert.equal(whole.statusCode, 200)
    assert.equal(whole.rawPayload.length, m.bytes)
    assert.equal(sha(whole.rawPayload), m.sha256)
    const tail = await t.request({ method: 'GET', url: `/media/${m.id}/file`, headers: { range: `bytes=${SMALL_BLOB_BYTES}-` } })
    assert.equal(tail.statusCode, 206)
    assert.deepEqual(tail.rawPayload, whole.rawPayload.subarray(SMALL_BLOB_BYTES))
    // Not kept: the storage is read each time.
    const file = blobFile(t, m.sha256)
    const other = Buffer.from(whole.rawPayload)
    other[0] = other[0]! ^ 0xff
    fs.writeFileSync(file, other)
    const reread = await t.request({ method: 'GET', url: `/media/${m.id}/file`, headers: { range: 'bytes=0-0' } })
    assert.deepEqual(reread.rawPayload, other.subarray(0, 1))
  })

  it('serves a variant read again from memory, and gives its media\'s 404 once the media is deleted', async () => {
    const m = await uploaded(t, await png(700, 300))
    const url = `/media/${m.id}/image?w=320&format=webp`
    const first = await t.request({ method: 'GET', url })
    assert.equal(first.statusCode, 200)
    const etag = first.headers.etag as string
    fs.rmSync(blobFile(t, etag.slice(1, -1)))
    const again = await t.request({ method: 'GET', url })
    assert.equal(again.statusCode, 200)
    assert.deepEqual(again.rawPayload, first.rawPayload)
    await t.request({ method: 'DELETE', url: `/media/${m.id}`, headers: await t.auth('alice', ['media:write']) })
    const gone = await t.request({ method: 'GET', url })
    assert.equal(gone.statusCode, 404)
    assert.equal(json(gone).code, 'MEDIA_NOT_FOUND')
  })

  it('runs libvips\' worker threads at nice 10 once an image is computed (Linux)', async (ctx) => {
    if (process.platform !== 'linux') {
      ctx.skip('thread priorities are read from /proc')
      return
    }
    const m = await uploaded(t, await png(900, 600))
    assert.equal((await t.request({ method: 'GET', url: `/media/${m.id}/image?w=640&format=jpeg` })).statusCode, 200)
    const workers = fs.readdirSync('/proc/self/task')
      .filter(task => fs.readFileSync(`/proc/self/task/${task}/comm`, 'latin1').startsWith('libvips'))
    assert.ok(workers.length > 0, 'libvips has worker threads')
    for (const task of workers) assert.equal(os.getPriority(Number(task)), 10, `thread ${task}`)
    assert.equal(os.getPriority(process.pid), 0, 'the event loop keeps its priority')
  })
})

describe('MEDIA_CACHE_MB', () => {
  it('takes 0 to 65536 (MiB) and refuses anything else, naming the setting', () => {
    assert.equal(loadConfig({}).media.cacheBytes, 32 * 1024 * 1024)
    assert.equal(loadConfig({ MEDIA_CACHE_MB: '0' }).media.cacheBytes, 0)
    assert.equal(loadConfig({ MEDIA_CACHE_MB: '65536' }).media.cacheBytes, 65536 * 1024 * 1024)
    for (const bad of ['65537', '-1', '1.5', 'lots']) {
      assert.throws(() => loadConfig({ MEDIA_CACHE_MB: bad }), (err: unknown) => err instanceof ConfigError && err.setting === 'MEDIA_CACHE_MB', bad)
    }
  })

  it('at 0 keeps nothing: every read goes to the storage', async () => {
    const t = await buildTestApp('sqlite', { MEDIA_CACHE_MB: '0' })
    const m = await uploaded(t, await png(64, 48))
    const first = await t.request({ method: 'GET', url: `/media/${m.id}/file` })
    assert.equal(first.statusCode, 200)
    const other = Buffer.from(first.rawPayload)
    other[0] = other[0]! ^ 0xff
    fs.writeFileSync(blobFile(t, m.sha256), other)
    const again = await t.request({ method: 'GET', url: `/media/${m.id}/file` })
    assert.deepEqual(again.rawPayload, other)
  })
})
