import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../../../helper.ts'
import { allPosts, fixture, importFile } from '../../imports/import-helper.ts'

const FAST = { IMPORT_POLL_MS: '20', RATE_LIMIT_MAX: '0' }

describe('POST /imports: where posts are converted', () => {
  it('gives the same posts and report on a thread of its own (IMPORT_WORKER_THREAD=true) and on the event loop (the default)', async () => {
    const results = []
    for (const thread of ['true', 'false']) {
      const t = await buildTestApp('sqlite', { ...FAST, IMPORT_WORKER_THREAD: thread, IMPORT_BATCH_SIZE: '3' })
      try {
        const admin = await t.auth('root', ['admin'])
        const job = await importFile(t, fixture('edge-cases.xml'), 'application/xml', admin)
        assert.equal(job.status, 'succeeded', job.failure)
        const posts = (await allPosts(t, admin)).map(p => ({ title: p.title, slug: p.slug, content: p.content, tags: p.tags, status: p.status }))
        assert.ok(posts.length > 5)
        results.push({ report: job.report, posts })
      } finally {
        await t.close()
      }
    }
    assert.deepEqual(results[0], results[1])
  })
})
