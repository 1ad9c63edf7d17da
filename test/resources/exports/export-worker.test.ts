import assert from 'node:assert/strict'
import { systemClock } from '../../../src/clock.ts'
import { describe, it } from 'node:test'
import pino from 'pino'
import { Counter, Registry } from 'prom-client'
import type { JobRunner } from '../../../src/jobs/job.ts'
import { postsResource } from '../../../src/resources/posts/index.ts'
import type { Post } from '../../../src/resources/posts/post.ts'
import { ExportWorker, PAGE_SIZE } from '../../../src/resources/exports/export-worker.ts'
import { runnerOf } from '../../helper.ts'
import { untilValue } from '../../support/poll.ts'
import { createPost } from '../../support/posts.ts'
import { type FreshStore, freshStore } from '../../support/store.ts'
import { before } from '../../support/hooks.ts'

const log = pino({ level: process.env.TEST_LOG ?? 'silent' })
const request = { format: 'ndjson' as const, filter: {}, callbackUrl: 'https://example.com/hooks' }
const v1 = { apiVersion: 1, linkBase: '' }

describe('ExportWorker', () => {
  let f: FreshStore
  before(async () => {
    f = await freshStore('sqlite')
    await f.store.transaction(async uow => {
      for (let i = 0; i < PAGE_SIZE + 10; i++) await createPost(uow, { title: `p${i}` })
    })
  })

  function worker (opts: { renderPost: (post: Post) => unknown, maxAttempts?: number }) {
    return runnerOf(new ExportWorker({
      store: f.store,
      log,
      leaseMs: 10_000,
      maxAttempts: opts.maxAttempts ?? 3,
      pollMs: 20,
      retentionDays: 7,
      source: { list: postsResource.exportable!.list, render: post => opts.renderPost(post as Post) },
      renderJob: job => ({ id: job.id, status: job.status, error: job.error }),
      jobEvent: job => ({ type: `export.${job.status}`, data: { id: job.id }, owner: job.owner, public: false }),
      webhookQueued: () => {},
      runs: new Counter({ name: 'runs', help: 'runs', labelNames: ['outcome'], registers: [new Registry()] }),
      clock: systemClock,
    }))
  }

  it('retries a failing run, then fails the job with the reason and queues export.failed in the same commit', async () => {
    const job = await f.store.exports.create('root', request, v1, new Date())
    const w = worker({ maxAttempts: 2, renderPost: () => { throw new Error('the disk is on fire') } })
    w.start()
    try {
      const failed = await untilValue(async () => await f.store.exports.findById(job.id, 'root'), j => j?.status === 'failed')
      assert.equal(failed?.attempts, 2)
      assert.match(failed?.error ?? '', /failed on the service's side 2 times/)
      assert.doesNotMatch(failed?.error ?? '', /disk/, 'the internal error stays in the log')
      assert.equal(failed?.size, null)
    } finally {
      await w.stop()
    }
    const [delivery] = await f.store.webhooks.claimDue(new Date(), 1000, 5)
    assert.equal(delivery?.exportId, job.id)
    assert.equal(delivery?.url, 'https://example.com/hooks')
    const payload = JSON.parse(delivery!.payload!)
    assert.equal(payload.type, 'export.failed')
    assert.equal(payload.data.status, 'failed')
  })

  it('hands a job back to the queue, without counting the run, when stopped in the middle of it', async () => {
    const job = await f.store.exports.create('root', { ...request, callbackUrl: null }, v1, new Date())
    let w: JobRunner | null = null
    let stopping: Promise<void> | undefined
    w = worker({ renderPost: post => { stopping ??= w!.stop(); return { id: post.id } } })
    w.start()
    await untilValue(async () => stopping !== undefined, called => called)
    await stopping
    const back = await f.store.exports.findById(job.id, 'root')
    assert.equal(back?.status, 'pending')
    assert.equal(back?.attempts, 0)
    // Another worker finishes it.
    const next = worker({ renderPost: post => ({ id: post.id }) })
    next.start()
    try {
      const done = await untilValue(async () => await f.store.exports.findById(job.id, 'root'), j => j?.status === 'succeeded')
      assert.equal(done?.exported, PAGE_SIZE + 10)
      assert.equal(done?.attempts, 1)
    } finally {
      await next.stop()
    }
  })
})
