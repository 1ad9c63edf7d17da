import http from 'node:http'
import assert from 'node:assert/strict'
import type net from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadConfig } from '../../../src/context.ts'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { closedLoop, openLoop, quantile, rawBurst, rawRequest } from '../../raw-http.ts'
import { recordResult } from '../../reliability-record.ts'
import { before } from '../../support/hooks.ts'

function busyWait (ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end) { /* the handler's cost: the event loop is the bottleneck */ }
}

/**
 * An app whose admission queue sheds beyond `waitMs`, on a real socket, with routes that burn the
 * loop: `/test/busy?ms=` in the handler (`workMs` by default), `/test/stall?ms=` once after the
 * answer (blocking work, a slow disk sync).
 */
async function sheddingApp (waitMs: number, workMs: number, env: Record<string, string> = {}): Promise<{ t: TestApp, port: number }> {
  const t = await buildTestApp('sqlite', { OVERLOAD_MAX_WAIT_MS: String(waitMs), RATE_LIMIT_MAX: '0', ...env }, {
    extend: app => {
      app.get<{ Querystring: { ms?: string } }>('/test/busy', { schema: { hide: true } }, async req => {
        busyWait(Number(req.query.ms ?? workMs))
        return { ok: true }
      })
      app.get<{ Querystring: { ms: string } }>('/test/stall', { schema: { hide: true } }, async req => {
        setImmediate(() => { busyWait(Number(req.query.ms)) })
        return { ok: true }
      })
    },
  })
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  return { t, port: (t.app.server.address() as net.AddressInfo).port }
}

describe('shedding by the time a request waited (OVERLOAD_MAX_WAIT_MS)', () => {
  const WAIT_MS = 200
  const WORK_MS = 40
  let port: number
  before(async () => { ({ port } = await sheddingApp(WAIT_MS, WORK_MS)) })

  it('serves the requests that waited through one stall, however long', async () => {
    // 4 kept-alive connections in a closed loop of 2 ms requests while the loop blocks once for
    // 500 ms, over the bound, as a fuzzer's slow request or a slow disk sync does. One stall is
    // not a standing queue: the requests behind it start with a sojourn of zero, and are served
    // (a rule that counted the stall shed the fuzzer's 11 others in flight).
    for (let round = 0; round < 2; round++) {
      const load = closedLoop(port, 4, 1200, '/test/busy?ms=2')
      // Real time on purpose (as every wait here): the shedder measures sojourns on real sockets.
      await sleep(400)
      assert.equal((await rawRequest(port, 'GET /test/stall?ms=500 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status, 200)
      const statuses = (await load).statuses
      assert.deepEqual(Object.keys(statuses), ['200'], `behind a stall: ${JSON.stringify(statuses)}`)
    }
  })

  it('answers a burst beyond capacity with fast 503s written without Fastify, and keeps the answered ones fast', async () => {
    // 40 requests of 40 ms each at once: served in turn, the last would wait 1.6 s.
    const results = await rawBurst(port, 40, 'GET /test/busy HTTP/1.1\r\nHost: x\r\nAccept-Language: de\r\nX-Request-Id: burst-1\r\nConnection: close\r\n\r\n')
    assert.deepEqual(results.filter(r => r.timedOut), [], 'nobody timed out')
    const served = results.filter(r => r.status === 200)
    const shed = results.filter(r => r.status === 503)
    assert.equal(served.length + shed.length, results.length, `only 200 and 503: ${results.map(r => r.status).join(',')}`)
    assert.ok(shed.length > 0, 'some requests were shed')
    assert.ok(served.length > 0, 'some requests were served')
    for (const r of shed) {
      assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/)
      assert.equal(r.headers['content-language'], 'de')
      assert.equal(r.headers['x-request-id'], 'burst-1')
      assert.equal(r.headers['cache-control'], 'no-store')
      assert.ok(Number(r.headers['retry-after']) > 0)
      assert.match(r.headers.traceparent ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      assert.equal(r.headers['x-content-type-options'], 'nosniff')
      const body = JSON.parse(r.body) as { code: string, request_id: string, status: number }
      assert.deepEqual([body.code, body.request_id, body.status], ['SERVICE_UNAVAILABLE', 'burst-1', 503])
    }
    // Served requests waited at most WAIT_MS + 100 ms (the interval), then worked WORK_MS; the
    // rest is the noisy machine's (a margin of 20 requests' work). Served in turn without
    // shedding, the last would take 40 × WORK_MS = 1.6 s.
    const slowest = Math.max(...served.map(r => r.closedAfterMs))
    assert.ok(slowest < WAIT_MS + 100 + 20 * WORK_MS, `slowest answered request took ${Math.round(slowest)} ms`)
    const slowestShed = Math.max(...shed.map(r => r.closedAfterMs))
    recordResult('overload-wait', {
      test: 'Burst beyond capacity on new connections (OVERLOAD_MAX_WAIT_MS=200)',
      injected: `40 requests of ${WORK_MS} ms of CPU at once (1.6 s of work), from another process`,
      count: results.length,
      result: `${served.length} served (slowest ${Math.round(slowest)} ms), ${shed.length} shed with 503 + Retry-After (slowest ${Math.round(slowestShed)} ms), 0 timed out; without shedding the last would wait ~1.6 s`,
    })
  })

  it('sheds nothing under steady saturation whose requests each wait less than the bound, nor a kept-alive client that paused, nor a new client', async () => {
    // 6 keep-alive connections, each sending its next request as soon as it has an answer: the
    // loop is never idle, yet each request waits only for the 5 ahead of it (~5 × 5 ms). Meanwhile
    // one client on a kept-alive connection pauses longer than the bound between its requests, and
    // new clients connect while the loop has been saturated for longer than the bound: a request's
    // sojourn runs from when it is read, so none of them is charged for the load around it.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const get = async () => await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: '/test/busy?ms=1', agent }, res => { res.resume(); res.on('end', () => { resolve(res.statusCode ?? 0) }) }).on('error', reject)
    })
    assert.equal(await get(), 200)
    const paused = (async () => {
      const statuses: number[] = []
      for (let i = 0; i < 3; i++) {
        // Real time on purpose: a pause longer than the bound between requests on one connection.
        await sleep(WAIT_MS * 2)
        statuses.push(await get())
      }
      return statuses
    })()
    const newcomers = (async () => {
      // Real time on purpose: newcomers once the loop has been saturated longer than the bound.
      await sleep(WAIT_MS * 3)
      const statuses: number[] = []
      for (let i = 0; i < 3; i++) {
        statuses.push((await rawRequest(port, 'GET /test/busy?ms=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status)
        // Real time on purpose: newcomers spread over the saturated time.
        await sleep(WAIT_MS)
      }
      return statuses
    })()
    const load = await closedLoop(port, 6, 1500, '/test/busy?ms=5')
    const pausedStatuses = await paused
    const newcomerStatuses = await newcomers
    agent.destroy()
    const answered = Object.values(load.statuses).reduce((a, b) => a + b, 0)
    assert.ok(answered > 20, `answered ${answered}`)
    assert.deepEqual(load.statuses, { 200: answered }, `statuses: ${JSON.stringify(load.statuses)}`)
    assert.deepEqual(pausedStatuses, [200, 200, 200], 'the client that paused on its kept-alive connection')
    assert.deepEqual(newcomerStatuses, [200, 200, 200], 'the client that connected during the load')
    recordResult('overload-steady', {
      test: 'Steady saturation within the bound (OVERLOAD_MAX_WAIT_MS=200)',
      injected: '6 keep-alive connections in a closed loop for 1.5 s, 5 ms of CPU per request, from another process; one more kept-alive client pausing 400 ms between requests; three new connections made during the load',
      count: answered + pausedStatuses.length + newcomerStatuses.length,
      result: `${answered + pausedStatuses.length + newcomerStatuses.length} served, 0 shed (slowest ${Math.round(load.slowest)} ms)`,
    })
  })

  it('sheds under steady saturation whose requests would wait beyond the bound', async () => {
    // 12 connections × 40 ms: served in turn, each would wait ~440 ms for the 11 ahead of it.
    const load = await closedLoop(port, 12, 1500, '/test/busy')
    assert.deepEqual(Object.keys(load.statuses).sort(), ['200', '503'], `statuses: ${JSON.stringify(load.statuses)}`)
    // Served requests waited at most WAIT_MS + 100 ms (the interval), then worked WORK_MS; unshed,
    // each would take ~480 ms.
    // The 90th percentile, not the slowest: one stall of a shared machine (CI saw 627 ms once)
    // delays the few answers in flight at that moment, whatever the rule.
    const served = [...load.times['200']!].sort((a, b) => a - b)
    const p90 = served[Math.floor(served.length * 0.9)]!
    assert.ok(p90 < WAIT_MS + 100 + 4 * WORK_MS, `90% of served answers within ${Math.round(p90)} ms: ${served.map(Math.round).join(', ')}`)
    recordResult('overload-steady-over', {
      test: 'Steady saturation beyond the bound (OVERLOAD_MAX_WAIT_MS=200)',
      injected: `12 keep-alive connections in a closed loop for 1.5 s, ${WORK_MS} ms of CPU per request (each would wait ~440 ms), from another process`,
      count: load.statuses[200]! + load.statuses[503]!,
      result: `${load.statuses[200]} served (90% within ${Math.round(p90)} ms, slowest ${Math.round(served.at(-1)!)}), ${load.statuses[503]} shed with 503, slowest answer ${Math.round(load.slowest)} ms`,
    })
  })

  it('serves normally once the burst is over', async () => {
    // Over once the loop has had nothing to do for a moment. A busy shared machine can still delay
    // one request past the bound, so a few attempts are allowed: what must not happen is shedding
    // going on after the load is gone. Real time on purpose: the loop idle for longer than the bound.
    await sleep(WAIT_MS * 2)
    let served = 0
    for (let attempt = 0; attempt < 20 && served < 5; attempt++) {
      if ((await rawRequest(port, 'GET /test/busy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status === 200) served++
      else await sleep(100) // real time on purpose: a busy machine's delay passes
    }
    assert.equal(served, 5)
  })
})

describe('shedding, when a client pool opens its connections at once', () => {
  const WAIT_MS = 400
  let port: number
  before(async () => { ({ port } = await sheddingApp(WAIT_MS, 2)) })

  it('sheds nothing, though libuv accepts the connections one per turn', async () => {
    // 28 connections opened at once, as a benchmark client opens them, then a closed loop of 2 ms
    // requests: each request waits for the 27 ahead of it (~60 ms), far within the bound. libuv
    // takes one connection from the kernel's accept queue per turn of the loop; turns that accept
    // serve at most a slice every other slice, so the pool is accepted in a few milliseconds
    // instead of one connection per served request (~800 ms, which shed its last connections).
    const load = await closedLoop(port, 28, 2000, '/test/busy?ms=2', { raw: true })
    const answered = Object.values(load.statuses).reduce((a, b) => a + b, 0)
    assert.ok(answered > 100, `answered ${answered}`)
    assert.deepEqual(load.statuses, { 200: answered }, `statuses: ${JSON.stringify(load.statuses)}`)
    recordResult('overload-ramp', {
      test: `A pool of new connections opened at once (OVERLOAD_MAX_WAIT_MS=${WAIT_MS})`,
      injected: '28 connections opened at once, then a closed loop for 2 s, 2 ms of CPU per request, from another process',
      count: answered,
      result: `${answered} served, 0 shed (slowest ${Math.round(load.slowest)} ms)`,
    })
  })
})

describe('shedding by requests in flight (OVERLOAD_MAX_IN_FLIGHT)', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp('sqlite', { OVERLOAD_MAX_IN_FLIGHT: '3', RATE_LIMIT_MAX: '0' }, {
      extend: app => {
        app.get('/test/wait', { schema: { hide: true } }, async () => {
          // Real time on purpose: a request that waits a second on I/O, holding its slot.
          await sleep(1000)
          return { ok: true }
        })
      },
    })
  })

  it('answers the request beyond the bound at once with 503, and not health checks', async () => {
    const started = performance.now()
    const pending = Array.from({ length: 10 }, async () => {
      const res = await t.app.inject({ method: 'GET', url: '/test/wait' })
      return { status: res.statusCode, ms: performance.now() - started, res }
    })
    // Real time on purpose: the health check comes while the slots are taken.
    await sleep(50)
    assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
    const results = await Promise.all(pending)
    assert.deepEqual(results.map(r => r.status).sort(), [200, 200, 200, 503, 503, 503, 503, 503, 503, 503])
    for (const r of results.filter(r => r.status === 503)) {
      assert.ok(r.ms < 800, `shed after ${Math.round(r.ms)} ms, before the served ones finished`)
      assert.equal(json(r.res).code, 'SERVICE_UNAVAILABLE')
      assert.ok(Number(r.res.headers['retry-after']) > 0)
    }
    recordResult('overload-in-flight', {
      test: 'Requests beyond OVERLOAD_MAX_IN_FLIGHT=3',
      injected: '10 concurrent requests that each wait 1 s on I/O',
      count: results.length,
      result: `3 served, 7 shed with 503 + Retry-After, slowest shed after ${Math.round(Math.max(...results.filter(r => r.status === 503).map(r => r.ms)))} ms`,
    })
    // Finished requests leave the count: the next three are served again.
    const again = await Promise.all(Array.from({ length: 3 }, async () => (await t.app.inject({ method: 'GET', url: '/test/wait' })).statusCode))
    assert.deepEqual(again, [200, 200, 200])
  })

  it('counts requests on real connections, and frees a slot when its client goes away before the answer', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (t.app.server.address() as net.AddressInfo).port
    const get = (signal?: AbortSignal) => new Promise<number>((resolve, reject) => {
      http.get({ port, host: '127.0.0.1', path: '/test/wait', agent: false, signal }, res => {
        res.resume()
        res.on('end', () => { resolve(res.statusCode!) })
      }).on('error', reject)
    })
    // Each on a connection of its own: three are served, the rest refused at once.
    const statuses = await Promise.all(Array.from({ length: 6 }, async () => await get()))
    assert.deepEqual(statuses.sort(), [200, 200, 200, 503, 503, 503])
    // Three clients give up 100 ms into their second-long requests. Their handlers run on, but
    // nobody waits for those answers: the slots are free at once, not when the handlers end.
    const gone = Array.from({ length: 3 }, async () => {
      const ac = new AbortController()
      setTimeout(() => { ac.abort() }, 100)
      return await get(ac.signal).catch((err: Error) => err.name)
    })
    // Real time on purpose: past the clients' 100 ms, before their handlers' second has run out.
    await sleep(300)
    const started = performance.now()
    const after = await Promise.all(Array.from({ length: 3 }, async () => await get()))
    assert.deepEqual(await Promise.all(gone), ['AbortError', 'AbortError', 'AbortError'])
    assert.deepEqual(after, [200, 200, 200], 'the slots of the clients that went away were free')
    assert.ok(performance.now() - started >= 900, 'the three were served, not refused')
    // Every request left the count exactly once: a leak would refuse more than three of these,
    // a request counted out twice would let more than three in.
    const last = await Promise.all(Array.from({ length: 6 }, async () => await get()))
    assert.deepEqual(last.sort(), [200, 200, 200, 503, 503, 503])
  })
})

describe('shedding at twice the capacity, at the default OVERLOAD_MAX_WAIT_MS', () => {
  /** How long the open-loop load lasts (npm run reliability runs it longer). */
  const SECONDS = Number(process.env.OPEN_LOOP_SECONDS ?? 2)
  const WORK_MS = 10
  let t: TestApp
  let port: number
  let waitMs: number
  before(async () => {
    // The default OVERLOAD_MAX_WAIT_MS, not the test helper's.
    waitMs = loadConfig({ DATABASE_URL: 'sqlite::memory:' }).overloadMaxWaitMs
    t = await buildTestApp('sqlite', { RATE_LIMIT_MAX: '0', OVERLOAD_MAX_WAIT_MS: String(waitMs) }, {
      extend: app => {
        app.get<{ Querystring: { ms?: string } }>('/test/busy', { schema: { hide: true } }, async req => {
          busyWait(Number(req.query.ms ?? WORK_MS))
          return { ok: true }
        })
      },
    })
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    port = (t.app.server.address() as net.AddressInfo).port
  })

  it('sheds nothing of a benchmark\'s closed loop of 64 connections', async () => {
    const load = await closedLoop(port, 64, 2000, '/test/busy?ms=0', { raw: true })
    const answered = Object.values(load.statuses).reduce((a, b) => a + b, 0)
    assert.deepEqual(load.statuses, { 200: answered }, `slowest ${Math.round(load.slowest)} ms`)
  })

  // An open loop opens a new connection whenever all of its kept-alive ones are busy, and libuv
  // takes one from the kernel's accept queue per turn of the loop: with turns that each served a
  // request, the backlog waited there, unseen, and was answered seconds late.
  it('keeps what it answers fast (p99 within twice the bound) and lets nothing time out', async () => {
    // The capacity, measured in this run: a closed loop that keeps the loop busy.
    const capacityRun = await closedLoop(port, 4, 1500, '/test/busy')
    const capacity = (capacityRun.statuses['200'] ?? 0) / 1.5
    assert.ok(capacity > 0)
    const load = await openLoop(port, Math.round(2 * capacity), SECONDS * 1000, '/test/busy')
    const served = load.times['200'] ?? []
    const p99 = quantile(served, 0.99)
    const shed = load.statuses['503'] ?? 0
    assert.equal(load.timedOut, 0)
    assert.ok(served.length > 0 && shed > 0, JSON.stringify(load.statuses))
    assert.deepEqual(Object.keys(load.statuses).filter(s => s !== '200' && s !== '503'), [])
    // The bound: twice the wait bound (1 s at the defaults), plus what this machine added to a
    // request of the capacity run (a closed loop that queues nothing), so a busy machine's noise
    // does not fail it.
    const noise = quantile(capacityRun.times['200'] ?? [], 0.99)
    assert.ok(p99 < 2 * waitMs + noise, `answered p99 ${Math.round(p99)} ms, bound ${Math.round(2 * waitMs + noise)} ms`)
    recordResult('overload-open-loop', {
      test: `Open loop at twice the capacity (defaults: OVERLOAD_MAX_WAIT_MS=${waitMs})`,
      injected: `${Math.round(2 * capacity)} requests/s for ${SECONDS} s of ${WORK_MS} ms of CPU each, twice the capacity measured in the same run (${Math.round(capacity)}/s), from another process`,
      count: load.sent,
      result: `${served.length} served (p50 ${Math.round(quantile(served, 0.5))} ms, p99 ${Math.round(p99)} ms, max ${Math.round(quantile(served, 1))} ms), ${shed} shed with 503, ${load.timedOut} timed out`,
    })
  })
})

describe('OVERLOAD_MAX_WAIT_MS=0', () => {
  let port: number
  before(async () => { ({ port } = await sheddingApp(0, 40)) })

  it('turns the admission queue off: a burst beyond capacity is served whole, however late', async () => {
    const results = await rawBurst(port, 20, 'GET /test/busy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert.deepEqual(results.map(r => r.status), results.map(() => 200))
    assert.ok(Math.max(...results.map(r => r.closedAfterMs)) > 500, 'the last waited for the 19 before it (~760 ms)')
  })
})
