import assert from 'node:assert/strict'
import { systemClock } from '../../../src/clock.ts'
import { before, describe, it } from 'node:test'
import pino from 'pino'
import type { Principal } from '../../../src/domain/principal.ts'
import { PostService } from '../../../src/resources/posts/post-service.ts'
import { SCHEDULE_CHANNEL } from '../../../src/resources/posts/schedule.ts'
import { PublishScheduler } from '../../../src/resources/posts/jobs/publish-scheduler.ts'
import type { Store } from '../../../src/store/store.ts'
import { runnerOf, storeKinds } from '../../helper.ts'
import { useFreshStore } from '../../support/store.ts'
import { TestClock } from '../../support/clock.ts'
import { until } from '../../support/poll.ts'

const alice: Principal = { subject: 'alice', scopes: new Set(['posts:write']), kind: 'jwt' }
const opts = { revisionsKeep: 50, clock: systemClock }
const none = { tags: [], excerpt: null }
const all = { filter: {}, sort: [{ key: 'number' as const, direction: 'desc' as const }], limit: 100, count: true }
const silent = pino({ level: 'silent' })

/** A clock `ms` ahead of now, so a post can be scheduled and be due a moment later without waiting. */
const ahead = (ms: number) => ({ now: () => new Date(Date.now() - ms) })

for (const kind of await storeKinds()) {
  describe(`editorial store [${kind}]`, () => {
    const f = useFreshStore(kind)
    let store: Store
    before(() => { store = f.store })

    /** A post scheduled for `inMs` from now (made through a service whose clock runs behind, when that is past). */
    async function scheduled (inMs: number, title = 'scheduled') {
      const publishAt = new Date(Date.now() + inMs).toISOString()
      return await store.transaction(async uow => await new PostService(uow, { ...opts, clock: ahead(60_000) })
        .create({ title, content: '', status: 'scheduled', publishAt, ...none }, alice))
    }

    /** The post as the scheduler reads it when it is due. */
    async function due (id: number) {
      const found = (await store.posts.due(new Date(), 1000)).find(d => d.id === id)
      assert.ok(found, `post ${id} is due`)
      return found
    }

    it('records no revision for a change that rolls back', async () => {
      const post = await store.transaction(async uow => await new PostService(uow, opts).create({ title: 'a', content: '', status: 'draft', ...none }, alice))
      await assert.rejects(store.transaction(async uow => {
        await new PostService(uow, opts).update(post.id, alice, () => ({ title: 'b', content: '', status: 'draft', ...none }))
        throw new Error('the rest of the request failed')
      }), /the rest of the request failed/)
      assert.equal((await store.revisions.list(post.id, all)).total, 1)
      assert.equal((await store.posts.findById(post.id, alice))!.title, 'a')
    })

    it('publishes a due post once however many switches race for it', async () => {
      const post = await scheduled(-10)
      // Two stores stand for two instances on PostgreSQL; SQLite has one writer per process, so its
      // racers share one store (two in one process would wait on each other's lock with the event loop blocked).
      const other = kind === 'postgres' ? await f.open() : store
      const read = await due(post.id)
      const results = await Promise.all([store, other, store, other].map(async s =>
        await s.transaction(async uow => await new PostService(uow, opts).publishScheduled(read))))
      assert.equal(results.filter(r => r !== null).length, 1)
      const revisions = await store.revisions.list(post.id, all)
      assert.deepEqual(revisions.items.map(r => [r.number, r.status, r.editor]), [[2, 'published', 'system'], [1, 'scheduled', 'alice']])
      const now = await store.posts.findById(post.id, null)
      assert.equal(now?.status, 'published')
      assert.equal(now?.publishAt, null)
    })

    it('lets an edit racing the switch win by revision: the edit is kept, and the switch publishes the edited post after', async () => {
      const post = await scheduled(-10, 'before')
      // The scheduler read the due post at its revision; an edit lands before its switch does.
      const read = await due(post.id)
      assert.equal(read.revision, post.revision)
      const edited = await store.transaction(async uow => await new PostService(uow, opts)
        .update(post.id, alice, current => ({ title: 'after', content: 'edited', status: current.status, publishAt: current.publishAt, ...none })))
      assert.equal(edited.status, 'scheduled', 'the edit keeps the schedule whose time has come')
      const lost = await store.transaction(async uow => await new PostService(uow, opts).publishScheduled(read))
      assert.equal(lost, null, 'the switch at the old revision is stale')
      const next = await due(post.id)
      assert.equal(next.revision, edited.revision)
      const published = await store.transaction(async uow => await new PostService(uow, opts).publishScheduled(next))
      assert.equal(published?.title, 'after')
      assert.equal(published?.content, 'edited')
      assert.deepEqual((await store.revisions.list(post.id, all)).items.map(r => [r.title, r.status, r.editor]),
        [['after', 'published', 'system'], ['after', 'scheduled', 'alice'], ['before', 'scheduled', 'alice']])
    })

    it('lets a switch win over an edit made with If-Match on the scheduled post: 412, never a lost edit', async () => {
      const post = await scheduled(-10)
      const stillDue = await due(post.id)
      assert.notEqual(await store.transaction(async uow => await new PostService(uow, opts).publishScheduled(stillDue)), null)
      await assert.rejects(store.transaction(async uow => await new PostService(uow, opts)
        .update(post.id, alice, () => ({ title: 'x', content: '', status: 'scheduled', publishAt: post.publishAt, ...none }), current => current.revision === post.revision)),
      (err: { code?: string }) => err.code === 'PRECONDITION_FAILED')
    })

    it('reads the next due time, and the due posts in order of publish_at', async () => {
      const far = await scheduled(30 * 86_400_000, 'far')
      const next = await store.posts.nextDue()
      assert.ok(next !== null && next.getTime() <= Date.parse(far.publishAt!))
      const a = await scheduled(-2000, 'a')
      const b = await scheduled(-1000, 'b')
      const due = (await store.posts.due(new Date(), 100)).map(d => d.id)
      assert.ok(due.indexOf(a.id) < due.indexOf(b.id))
      assert.ok(!due.includes(far.id))
      assert.equal((await store.posts.due(new Date(), 1)).length, 1)
    })

    it('delivers a unit of work\'s signal to listeners, only once it commits', async () => {
      // PostgreSQL: another store (another instance's connection) hears it through NOTIFY. SQLite's
      // signals reach the listeners of the store that sent them: one process writes a SQLite file.
      const listener = kind === 'postgres' ? await f.open() : store
      let heard = 0
      const stop = await listener.listen(SCHEDULE_CHANNEL, () => { heard++ })
      try {
        // PostgreSQL: the listener calls once when it starts listening (a signal may have been missed before).
        if (kind === 'postgres') await until(() => heard > 0, 'the call on listening', 5000)
        const before = heard
        await assert.rejects(store.transaction(async uow => {
          await uow.signal(SCHEDULE_CHANNEL)
          throw new Error('rolled back')
        }))
        await store.transaction(async uow => { await uow.signal(SCHEDULE_CHANNEL) })
        await until(() => heard > before, 'a committed signal', 2000)
        // Signals arrive in the order of their commits: a rolled-back one, had it been sent, came first.
        assert.equal(heard, before + 1, 'the committed signal is delivered, the rolled-back one is not')
      } finally {
        await stop()
      }
    })

    it('runs a scheduler that publishes what is due at start (caught up after downtime) and sleeps until the next due time', async () => {
      const missed = await scheduled(-5000, 'missed while down')
      const clock = new TestClock()
      const scheduler = runnerOf(new PublishScheduler({ store, log: silent, revisionsKeep: 50, rescanMs: 60_000, clock }))
      const published = async (id: number) => (await store.posts.findById(id, null))?.status === 'published'
      await scheduler.start()
      try {
        await until(async () => await published(missed.id), 'the post missed while down', 5000)
        // Scheduled after the scheduler went to sleep (for up to a minute): the signal wakes it for the new time.
        const soon = await store.transaction(async uow => await new PostService(uow, { ...opts, clock })
          .create({ title: 'soon', content: '', status: 'scheduled', publishAt: new Date(clock.now().getTime() + 400).toISOString(), ...none }, alice))
        clock.advance(400)
        await until(async () => await published(soon.id), 'the post due 400 ms later', 5000)
      } finally {
        await scheduler.stop()
      }
    })
  })
}
