import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { SignJWT } from 'jose'
import { buildApp } from '../../../src/app.ts'
import { type AppContext, createContext, openStore } from '../../../src/context.ts'
import { freshDatabase, JWT_SECRET, postgresAvailable, testConfig } from '../../helper.ts'
import { type S3Server, S3RVER_CREDENTIALS, startS3 } from '../../support/s3.ts'
import { noisyJpeg } from './images.ts'

/**
 * Two instances on one PostgreSQL database and one S3-compatible bucket (a real S3-protocol
 * server): the first requests for a variant, spread over both, make one computation.
 */
describe('variants across two instances (postgres, s3)', { skip: !(await postgresAvailable()) }, () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>
  let s3: S3Server
  const apps: FastifyInstance[] = []
  const contexts: AppContext[] = []
  before(async () => {
    db = await freshDatabase('postgres')
    s3 = await startS3()
    const storage = {
      MEDIA_STORAGE: 's3',
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
    }
    for (let i = 0; i < 2; i++) {
      // Each instance a data folder of its own: nothing but the database and the bucket is shared.
      const config = testConfig(db.url, `${db.dataDir}-${i}`, storage)
      const store = await openStore(config)
      await store.migrate()
      const context = await createContext(config, { store })
      const app = await buildApp(context)
      await app.ready()
      apps.push(app)
      contexts.push(context)
    }
  })
  after(async () => {
    for (const app of apps) await app.close()
    for (const c of contexts) await c.store.close()
    await db.drop()
    await s3.close()
  })

  it('ten concurrent first requests for one variant on two instances make exactly one computation', async () => {
    const token = await new SignJWT({ scope: 'media:write' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime('1h').sign(new TextEncoder().encode(JWT_SECRET))
    const made = await apps[0]!.inject({ method: 'POST', url: '/media', headers: { authorization: `Bearer ${token}`, 'content-type': 'image/jpeg' }, payload: await noisyJpeg(1600, 1200) })
    assert.equal(made.statusCode, 201, made.body)
    const id = (made.json() as { id: string }).id
    const answers = await Promise.all(Array.from({ length: 10 }, async (_, i) =>
      await apps[i % 2]!.inject({ method: 'GET', url: `/media/${id}/image?w=1280&format=webp` })))
    assert.deepEqual(answers.map(a => a.statusCode), Array(10).fill(200))
    assert.equal(new Set(answers.map(a => a.headers.etag)).size, 1, 'the same bytes from both')
    let computed = 0
    for (const c of contexts) {
      const metric = await c.metrics.getSingleMetric('media_variant_computations_total')?.get()
      computed += metric?.values.reduce((n, v) => n + v.value, 0) ?? 0
    }
    assert.equal(computed, 1)
  })
})
