import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { RESOURCES } from '../../src/registry.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { countdownsResource } from '../fixtures/countdowns/index.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../helper.ts'
import { TestClock } from '../support/clock.ts'
import { until, untilValue } from '../support/poll.ts'
import { before } from '../support/hooks.ts'

// The one line a new resource adds to src/registry.ts, here beside the registry's own.
const resources = [...RESOURCES, countdownsResource]
const LEASE_MS = 30_000

type Headers = Record<string, string>

for (const kind of await storeKinds()) {
  describe(`a long operation declared on the core (test/fixtures/countdowns) [${kind}]`, () => {
    const clock = new TestClock()
    let t: TestApp
    let alice: Headers

    before(async () => {
      t = await buildTestApp(kind, { COUNTDOWNS_STEP_MS: '20', COUNTDOWNS_LEASE_MS: String(LEASE_MS) }, { resources, clock })
      alice = await t.auth('alice', ['countdowns:write'])
    })

    /** Polls until the countdown ended, checking Retry-After on every answer. */
    async function ended (url: string): Promise<any> {
      const read = async () => {
        const res = await t.request({ method: 'GET', url, headers: alice })
        assert.equal(res.statusCode, 200, res.body)
        return { body: json(res), retryAfter: res.headers['retry-after'] }
      }
      const over = (r: { body: any, retryAfter: unknown }) => {
        const done = r.body.status === 'succeeded' || r.body.status === 'failed'
        assert.equal(r.retryAfter, done ? undefined : '1')
        return done
      }
      return (await untilValue(read, over, 20_000)).body
    }

    const interrupted = async () => Number(/countdown_runs_total\{outcome="interrupted"\} (\d+)/.exec(await t.scrape())?.[1] ?? 0)
    const db = () => (t.store as KyselyStore).db

    for (const [prefix, idName] of [['', 'id'], ['/v2', 'countdownId']] as const) {
      it(`accepts with 202, Location and ETag, is polled to its end, 304 on If-None-Match, 404 for another's (${prefix || 'v1'})`, async () => {
        const res = await t.request({ method: 'POST', url: `${prefix}/countdowns`, headers: alice, payload: { from: 3 } })
        assert.equal(res.statusCode, 202, res.body)
        const made = json(res)
        const url = `${prefix}/countdowns/${made[idName] as number}`
        assert.equal(res.headers.location, url)
        assert.match(String(res.headers.etag), /^"/)
        assert.equal(made.start, 3)

        const done = await ended(url)
        assert.equal(done.status, 'succeeded')
        assert.equal(done.remaining, 0)
        assert.equal(done.attempts, 1)

        const read = await t.request({ method: 'GET', url, headers: alice })
        const again = await t.request({ method: 'GET', url, headers: { ...alice, 'if-none-match': String(read.headers.etag) } })
        assert.equal(again.statusCode, 304)
        const theirs = await t.request({ method: 'GET', url, headers: await t.auth('bob', ['countdowns:write']) })
        assert.equal(theirs.statusCode, 404)
        assert.equal(json(theirs).code, 'COUNTDOWN_NOT_FOUND')
      })
    }

    it('a run that lost its lease writes nothing more; the countdown is taken up again once that lease lapses', async () => {
      const before = await interrupted()
      const res = await t.request({ method: 'POST', url: '/countdowns', headers: alice, payload: { from: 40 } })
      const { id } = json(res) as { id: number }
      await until(async () => (await t.store.countdowns.find(id, 'alice'))!.remaining < 40, 'the run to count')
      // Another runner holds it now (ours lapsed, as far as the store knows).
      await sql`UPDATE countdowns SET lease_token = 'another' WHERE id = ${id}`.execute(db())
      await until(async () => await interrupted() === before + 1, 'the run to stop')
      const left = await t.store.countdowns.find(id, 'alice')
      assert.equal(left!.status, 'running')
      assert.ok(left!.remaining > 0)
      const { rows } = await sql<{ lease_token: string }>`SELECT lease_token FROM countdowns WHERE id = ${id}`.execute(db())
      assert.equal(rows[0]!.lease_token, 'another', 'the stopped run ended nothing')

      clock.advance(LEASE_MS + 1)
      t.context.jobs.wake('countdowns')
      const done = await ended(`/countdowns/${id}`)
      assert.equal(done.status, 'succeeded')
      assert.equal(done.remaining, 0)
      assert.equal(done.attempts, 2)
    })

    it('a run whose runner crashed mid-run is taken up by another runner once its lease lapses, from what it committed', async () => {
      // A runner of a process that then died: it claimed the countdown, committed one count, and stopped.
      const held = await t.store.transaction(async uow => {
        await uow.countdowns.create('alice', 5, clock.now())
        return await uow.countdowns.claim(clock.now(), LEASE_MS, 3)
      })
      assert.ok(held)
      assert.equal(await t.store.countdowns.count(held, 4, new Date(clock.now().getTime() + LEASE_MS), clock.now()), true)
      const url = `/countdowns/${held.job.id}`
      const running = await t.request({ method: 'GET', url, headers: alice })
      assert.equal(json(running).status, 'running')
      assert.equal(json(running).remaining, 4)
      assert.equal(running.headers['retry-after'], '1')

      clock.advance(LEASE_MS + 1)
      t.context.jobs.wake('countdowns')
      const done = await ended(url)
      assert.equal(done.status, 'succeeded')
      assert.equal(done.attempts, 2)
      assert.equal(await t.store.countdowns.count(held, 3, new Date(clock.now().getTime() + LEASE_MS), clock.now()), false, 'the dead runner writes nothing')
      assert.equal(await t.store.countdowns.finish(held, null, clock.now()), null)
    })
  })

  describe(`a long operation that fails on the service's side [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind, { COUNTDOWNS_FAIL_AT: '2', COUNTDOWNS_MAX_ATTEMPTS: '2', COUNTDOWNS_POLL_MS: '20' }, { resources }) })

    it('is tried again, from what it committed, then failed with the reason its owner reads', async () => {
      const alice = await t.auth('alice', ['countdowns:write'])
      const res = await t.request({ method: 'POST', url: '/countdowns', headers: alice, payload: { from: 4 } })
      const url = res.headers.location!
      const done = await untilValue(async () => json(await t.request({ method: 'GET', url, headers: alice })), c => c.status === 'failed', 20_000)
      assert.equal(done.attempts, 2)
      assert.equal(done.remaining, 2, 'each run went on from the last count committed')
      assert.equal(done.failure, `Countdown ${done.id as number} failed 2 times and was given up.`)
      const metrics = await t.scrape()
      assert.match(metrics, /countdown_runs_total\{outcome="retried"\} 1/)
      assert.match(metrics, /countdown_runs_total\{outcome="failed"\} 1/)
    })
  })
}
