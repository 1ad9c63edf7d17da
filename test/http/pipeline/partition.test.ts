import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { recordResult } from '../../reliability-record.ts'
import { until } from '../../support/poll.ts'
import { TcpProxy } from '../../tcp-proxy.ts'
import { before } from '../../support/hooks.ts'

const DEADLINE_MS = 1500
/** Scheduling noise on a busy 2-core machine; far below the seconds a stacked timeout would add. */
const SLACK_MS = 1000

function assertUnavailable (res: LightMyRequestResponse, what: string): void {
  assert.equal(res.statusCode, 503, `${what}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.ok(['SERVICE_UNAVAILABLE', 'REQUEST_TIMEOUT'].includes(json(res).code), what)
  assert.ok(Number(res.headers['retry-after']) > 0, `${what}: Retry-After`)
}

/** GET /posts every 100 ms until it is served, for 10 s at most: the answer. */
async function untilServed (t: TestApp): Promise<LightMyRequestResponse> {
  let res: LightMyRequestResponse | undefined
  await until(async () => (res = await t.app.inject({ method: 'GET', url: '/posts' })).statusCode === 200, 'GET /posts to be served', 10_000, 100)
  return res!
}

if ((await storeKinds()).includes('postgres')) {
  describe('a PostgreSQL network partition (bytes stop flowing) [postgres]', () => {
    let proxy: TcpProxy
    let t: TestApp
    let auth: { authorization: string }
    let id: number
    before(async () => {
      proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5432 })
      // The settings whose sum used to outlast the deadline: a connect timeout and a statement timeout.
      t = await buildTestApp('postgres', { REQUEST_TIMEOUT_MS: String(DEADLINE_MS), PG_CONNECT_TIMEOUT_MS: '5000', PG_STATEMENT_TIMEOUT_MS: '15000' }, { url: u => proxy.via(u) })
      auth = await t.auth('alice')
      const res = await t.app.inject({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'before', content: '' } })
      assert.equal(res.statusCode, 201)
      id = json(res).id
    })
    after(async () => {
      proxy.heal()
      await t.close()
      await proxy.close()
    })

    it('ends every request by its deadline with 503 and Retry-After', async () => {
      proxy.hold()
      const started = performance.now()
      const requests = [
        ...Array.from({ length: 12 }, () => ({ method: 'GET' as const, url: '/posts' })),
        ...Array.from({ length: 6 }, () => ({ method: 'GET' as const, url: `/posts/${id}` })),
        ...Array.from({ length: 6 }, (_, i) => ({ method: 'POST' as const, url: '/posts', headers: auth, payload: { title: `during ${i}`, content: '' } })),
        { method: 'PUT' as const, url: `/posts/${id}`, headers: auth, payload: { title: 'during', content: '' } },
        { method: 'DELETE' as const, url: `/posts/${id}`, headers: auth },
      ]
      const answers = await Promise.all(requests.map(async r => {
        const res = await t.app.inject(r)
        return { res, ms: performance.now() - started, what: `${r.method} ${r.url}` }
      }))
      for (const a of answers) {
        assertUnavailable(a.res, a.what)
        assert.ok(a.ms < DEADLINE_MS + SLACK_MS, `${a.what} answered after ${Math.round(a.ms)} ms`)
      }
      recordResult('partition-deadline', {
        test: 'PostgreSQL network partition: bytes stop flowing (REQUEST_TIMEOUT_MS=1500, connect 5 s, statement 15 s)',
        injected: 'a TCP proxy that stops forwarding in both directions; concurrent reads and writes',
        count: answers.length,
        result: `all 503 with Retry-After, slowest after ${Math.round(Math.max(...answers.map(a => a.ms)))} ms; no write answered 503 was kept`,
      })
      const ready = performance.now()
      assertUnavailable(await t.app.inject({ method: 'GET', url: '/readyz' }), 'GET /readyz')
      assert.ok(performance.now() - ready < DEADLINE_MS + SLACK_MS)
      assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'alive, though not ready')
    })

    it('keeps ending requests by their deadline while the partition lasts', async () => {
      // Real time on purpose: the partition (a TCP proxy) lasts a while before the request is made.
      await sleep(500)
      const started = performance.now()
      const res = await t.app.inject({ method: 'GET', url: '/posts' })
      assertUnavailable(res, 'GET /posts')
      assert.ok(performance.now() - started < DEADLINE_MS + SLACK_MS, `answered after ${Math.round(performance.now() - started)} ms`)
    })

    it('serves again once the network heals, without a restart, and kept no write it answered 503 to', async () => {
      proxy.cut()
      proxy.heal()
      let res: LightMyRequestResponse | undefined
      await until(async () => (res = await t.app.inject({ method: 'GET', url: `/posts/${id}` })).statusCode === 200, `GET /posts/${id} to be served`, 10_000, 200)
      res = res!
      assert.equal(json(res).title, 'before', 'the PUT answered 503 changed nothing')
      const list = await t.app.inject({ method: 'GET', url: '/posts?limit=100' })
      assert.deepEqual(json(list).map((p: { title: string }) => p.title), ['before'])
    })
  })

  describe('a partition at the default settings [postgres]', () => {
    it('answers every request within STORE_BUDGET_MS and a little after it began waiting on the store, however many waits it queued behind', async () => {
      const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5432 })
      const t = await buildTestApp('postgres', {}, { url: u => proxy.via(u) })
      try {
        const budget = t.config.storeBudgetMs
        const auth = await t.auth('alice')
        // A warm pool: some requests find an idle connection (then a statement waits), the rest
        // queue for a place and then for a new connection.
        await Promise.all(Array.from({ length: 4 }, async () => await t.app.inject({ method: 'GET', url: '/posts' })))
        proxy.hold()
        const started = performance.now()
        const answers = await Promise.all([
          // Reads the public answers cache has not kept (it may answer /posts for up to a second more).
          ...Array.from({ length: 30 }, (_, i) => ({ method: 'GET' as const, url: `/posts?limit=${i + 1}` })),
          ...Array.from({ length: 6 }, (_, i) => ({ method: 'POST' as const, url: '/posts', headers: auth, payload: { title: `during ${i}`, content: '' } })),
        ].map(async r => {
          const res = await t.app.inject(r)
          return { res, ms: performance.now() - started }
        }))
        const slowest = Math.max(...answers.map(a => a.ms))
        for (const a of answers) assertUnavailable(a.res, 'a request during the partition')
        assert.ok(slowest <= budget + 500, `the slowest answer came after ${Math.round(slowest)} ms (STORE_BUDGET_MS ${budget})`)
      } finally {
        proxy.heal()
        await t.close()
        await proxy.close()
      }
    })
  })

  describe('connections lost in a partition [postgres]', () => {
    it('are given up by the deadline of the request that used them, so the pool recovers when the network does', async () => {
      const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5432 })
      const t = await buildTestApp('postgres', { REQUEST_TIMEOUT_MS: String(DEADLINE_MS), PG_POOL_MAX: '2' }, { url: u => proxy.via(u) })
      try {
        assert.equal((await t.app.inject({ method: 'GET', url: '/posts' })).statusCode, 200)
        proxy.hold()
        // Reads the public answers cache has not kept (it may answer /posts for up to a second more).
        const during = await Promise.all(Array.from({ length: 4 }, async (_, i) => await t.app.inject({ method: 'GET', url: `/posts?limit=${i + 1}` })))
        for (const res of during) assertUnavailable(res, 'GET /posts during the partition')
        // The route is back, but the flows of the pool's two connections are lost for good.
        proxy.healForNewConnections()
        const healed = performance.now()
        const res = await untilServed(t)
        const recovery = performance.now() - healed
        assert.equal(res.statusCode, 200, res.body)
        assert.ok(recovery < DEADLINE_MS + SLACK_MS, `served again ${Math.round(recovery)} ms after the network healed`)
        recordResult('partition-recovery', {
          test: 'Pool connections lost for good in a partition (PG_POOL_MAX=2)',
          injected: 'the partition ends for new connections only; the old flows stay silent',
          count: 1,
          result: `served again ${Math.round(recovery)} ms after the network healed (before: up to connect + statement timeout, 20 s)`,
        })
      } finally {
        await t.close()
        await proxy.close()
      }
    })
  })

  describe('the store\'s circuit breaker [postgres]', () => {
    const BUDGET_MS = 400
    it('bounds store waits by STORE_BUDGET_MS, opens after consecutive failures, answers 503 at once while open, and closes when a probe succeeds', async () => {
      const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5432 })
      // The request's deadline is far: only the store budget can end the waits early.
      const t = await buildTestApp('postgres', { REQUEST_TIMEOUT_MS: '10000', STORE_BUDGET_MS: String(BUDGET_MS), STORE_CIRCUIT_FAILURES: '3' }, { url: u => proxy.via(u) })
      const circuitState = async () => /store_circuit_state\{state="([a-z-]+)"\} 1/.exec(await t.scrape())?.[1]
      try {
        assert.equal((await t.app.inject({ method: 'GET', url: '/posts' })).statusCode, 200)
        assert.equal(await circuitState(), 'closed')
        proxy.hold()
        const started = performance.now()
        // Reads the public answers cache has not kept (it may answer /posts for up to a second more).
        const during = await Promise.all(Array.from({ length: 4 }, async (_, i) => await t.app.inject({ method: 'GET', url: `/posts?limit=${i + 1}` })))
        const slowest = performance.now() - started
        for (const res of during) assertUnavailable(res, 'GET /posts during the partition')
        // Before: each waited out the request's whole budget (here 10 s), or PG_CONNECT_TIMEOUT_MS (5 s).
        assert.ok(slowest < BUDGET_MS + SLACK_MS, `answered after ${Math.round(slowest)} ms`)
        // Read from the store itself: a scrape during the partition also runs collectors that ask the store.
        assert.equal(t.store.circuit.state, 'open')

        // Open: nothing is tried, so the answer says so, and readiness says so at once.
        const shed = await t.app.inject({ method: 'GET', url: '/posts' })
        assertUnavailable(shed, 'GET /posts with the circuit open')
        assert.match(json(shed).detail, /circuit is open/)
        const ready = await t.app.inject({ method: 'GET', url: '/readyz' })
        assertUnavailable(ready, 'GET /readyz with the circuit open')
        assert.match(json(ready).detail, /circuit is (open|half-open)/)
        assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)

        proxy.cut()
        proxy.heal()
        const healed = performance.now()
        const res = await untilServed(t)
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(await circuitState(), 'closed')
        // At least once: on a loaded machine a connection begun in the partition may still time out
        // after the heal, three in a row open it again, and the next probe closes it as this one did.
        assert.match(await t.scrape(), /store_circuit_opened_total [1-9]/)
        assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
        recordResult('store-circuit', {
          test: 'Store circuit breaker in a PostgreSQL partition (STORE_BUDGET_MS=400, STORE_CIRCUIT_FAILURES=3, REQUEST_TIMEOUT_MS=10000)',
          injected: 'a TCP proxy that stops forwarding; 4 concurrent reads, then one more, /readyz, then the network heals',
          count: during.length + 2,
          result: `the 4 in flight 503 after ${Math.round(slowest)} ms at most (the store budget, not the 10 s deadline); the circuit opened, the next read and /readyz 503 at once without trying the store; served again ${Math.round(performance.now() - healed)} ms after the network healed (a probe each second)`,
        })
      } finally {
        proxy.heal()
        await t.close()
        await proxy.close()
      }
    })
  })
}
