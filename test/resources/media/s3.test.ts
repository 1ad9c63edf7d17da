import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, describe, it } from 'node:test'
import sharp from 'sharp'
import { sweepOnce } from '../../../src/resources/media/sweep.ts'
import type { BlobStorage } from '../../../src/storage/blob-storage.ts'
import { openS3BlobStorage } from '../../../src/storage/s3-blob-storage.ts'
import { buildTestApp, freePort, json, storeKinds, type TestApp } from '../../helper.ts'
import { type S3Server, S3RVER_CREDENTIALS, startS3 } from '../../support/s3.ts'
import { png } from './images.ts'
import { before } from '../../support/hooks.ts'

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

/** The settings of `MEDIA_STORAGE=s3` on `endpoint`. */
function s3Env (s3: S3Server, endpoint = s3.endpoint): Record<string, string> {
  return {
    MEDIA_STORAGE: 's3',
    S3_BUCKET: s3.bucket,
    S3_ENDPOINT: endpoint,
    S3_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
  }
}

async function keysOf (blobs: BlobStorage): Promise<string[]> {
  const out: string[] = []
  for await (const k of blobs.keys()) out.push(k)
  return out.sort()
}

for (const kind of await storeKinds()) {
  describe(`media on S3-compatible storage [${kind}]`, () => {
    let s3: S3Server
    let t: TestApp
    let bucket: BlobStorage
    let alice: Record<string, string>
    before(async () => {
      s3 = await startS3()
      bucket = await openS3BlobStorage(s3.options())
      t = await buildTestApp(kind, s3Env(s3))
      alice = await t.auth('alice', ['media:write'])
    })
    after(async () => {
      await t.close()
      await bucket.close()
      await s3.close()
    })

    const upload = async (body: Buffer) =>
      await t.request({ method: 'POST', url: '/media', headers: { ...alice, 'content-type': 'image/png' }, payload: body })

    it('keeps an upload in the bucket under its SHA-256, once however many media hold the bytes', async () => {
      const image = await png(300, 200)
      const first = await upload(image)
      assert.equal(first.statusCode, 201, first.body)
      const media = json<{ id: string, sha256: string, bytes: number }>(first)
      const keys = await keysOf(bucket)
      assert.deepEqual(keys, [`${media.sha256.slice(0, 2)}/${media.sha256}`])

      const file = await t.request({ method: 'GET', url: `/media/${media.id}/file` })
      assert.equal(file.statusCode, 200)
      assert.equal(sha(file.rawPayload), media.sha256)
      assert.equal(file.rawPayload.length, media.bytes)

      const part = await t.request({ method: 'GET', url: `/media/${media.id}/file`, headers: { range: 'bytes=1-4' } })
      assert.equal(part.statusCode, 206)
      assert.deepEqual(part.rawPayload, file.rawPayload.subarray(1, 5))

      const second = await upload(image)
      assert.equal(second.statusCode, 201)
      const again = json<{ id: string, sha256: string }>(second)
      assert.notEqual(again.id, media.id)
      assert.equal(again.sha256, media.sha256)
      assert.deepEqual(await keysOf(bucket), keys, 'identical bytes are stored once')
    })

    it('stores a variant in the bucket and serves it from there', async () => {
      const media = json<{ id: string }>(await upload(await png(700, 100)))
      const before = (await keysOf(bucket)).length
      const variant = await t.request({ method: 'GET', url: `/media/${media.id}/image?w=320&format=webp` })
      assert.equal(variant.statusCode, 200)
      assert.equal(variant.headers['content-type'], 'image/webp')
      assert.equal((await sharp(variant.rawPayload).metadata()).width, 320)
      assert.equal((await keysOf(bucket)).length, before + 1, 'the variant is a blob of its own')
      const cached = await t.request({ method: 'GET', url: `/media/${media.id}/image?w=320&format=webp` })
      assert.deepEqual(cached.rawPayload, variant.rawPayload)
    })

    it('removes the blob from the bucket once no media holds it', async () => {
      const image = await png(123, 45)
      const media = json<{ id: string, sha256: string }>(await upload(image))
      const key = `${media.sha256.slice(0, 2)}/${media.sha256}`
      assert.ok((await keysOf(bucket)).includes(key))
      const del = await t.request({ method: 'DELETE', url: `/media/${media.id}`, headers: alice })
      assert.equal(del.statusCode, 204)
      assert.equal((await t.request({ method: 'GET', url: `/media/${media.id}/file` })).statusCode, 404)
      await sweepOnce(t.store, t.context.services.mediaLibrary)
      assert.ok(!(await keysOf(bucket)).includes(key), 'the sweep removed the unheld blob')
    })
  })

  describe(`media with the S3 store out of reach [${kind}]`, () => {
    let s3: S3Server
    let t: TestApp
    before(async () => {
      s3 = await startS3()
      // Nothing listens on this port: every connection is refused.
      t = await buildTestApp(kind, s3Env(s3, `http://127.0.0.1:${await freePort()}`))
    })
    after(async () => {
      await t.close()
      await s3.close()
    })

    it('answers an upload 503 with Retry-After within the request deadline, and records nothing', async () => {
      const alice = await t.auth('alice', ['media:write'])
      const started = Date.now()
      const res = await t.request({ method: 'POST', url: '/media', headers: { ...alice, 'content-type': 'image/png' }, payload: await png(40, 30) })
      assert.equal(res.statusCode, 503, res.body)
      assert.equal(res.headers['content-type'], 'application/problem+json')
      assert.ok(Number(res.headers['retry-after']) > 0, 'Retry-After')
      assert.ok(Date.now() - started < t.config.requestTimeoutMs, 'answered within the request deadline')
      const list = await t.request({ method: 'GET', url: '/media', headers: alice })
      assert.equal(list.statusCode, 200)
      assert.deepEqual(json(list), [])
    })
  })
}
