import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import v8 from 'node:v8'
import vm from 'node:vm'
import { buildTestApp, type TestApp } from '../helper.ts'
import { recordResult } from '../reliability-record.ts'
import { before } from '../support/hooks.ts'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

async function heapAfterGc (): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc()
    // Real time on purpose: finalizers and weak references are let go on later turns after a collection.
    await sleep(50)
  }
  return process.memoryUsage().heapUsed
}

const MB = 1024 * 1024
const ROUNDS = 3
const PER_ROUND = Number(process.env.MEMORY_REQUESTS ?? 200)

/**
 * Hostile load must leave nothing behind: after the first round has warmed every cache (compiled
 * schemas, prepared statements, the rate limiter's LRU of at most 50 000 callers), further rounds
 * of the same load must not grow the heap that survives garbage collection.
 */
describe('memory under hostile load', () => {
  let t: TestApp
  let tokens: string[]
  before(async () => {
    t = await buildTestApp('sqlite', { REQUEST_TIMEOUT_MS: '200' }, {
      extend: app => {
        // A request abandoned at its deadline whose work goes on and answers late: nothing may stay.
        app.get('/test/stuck', { schema: { hide: true } }, async () => {
          // Real time on purpose: work that outlives the 200 ms deadline.
          await sleep(300)
          return { late: true }
        })
      },
    })
    tokens = await Promise.all(Array.from({ length: 50 }, async (_, i) => `Bearer ${await t.token(`user-${i}`, ['posts:write'])}`))
  })

  async function round (): Promise<void> {
    const big = JSON.stringify({ title: 't', content: 'x'.repeat(90_000) })
    const pending: Promise<unknown>[] = []
    for (let i = 0; i < PER_ROUND; i++) {
      const authorization = tokens[i % tokens.length]!
      const json = { authorization, 'content-type': 'application/json' }
      const kind = i % 6
      pending.push(t.app.inject(
        kind === 0
          ? { method: 'POST', url: '/posts', headers: json, payload: big }
          : kind === 1
            ? { method: 'POST', url: '/posts', headers: json, payload: '['.repeat(2000) + ']'.repeat(2000) }
            : kind === 2
              ? { method: 'GET', url: `/posts?q=${'a'.repeat(150)}&limit=100` }
              : kind === 3
                ? { method: 'GET', url: `/nowhere/${'z'.repeat(500)}`, remoteAddress: `10.0.0.${i % 200}` }
                : kind === 4
                  ? { method: 'PATCH', url: '/posts/1', headers: { authorization, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ title: 'y'.repeat(300) }) }
                  : { method: 'GET', url: '/test/stuck' }
      ))
      if (pending.length >= 50) await Promise.all(pending.splice(0))
    }
    await Promise.all(pending)
  }

  it(`keeps no memory per request: ${ROUNDS} rounds of ${PER_ROUND} hostile requests`, async () => {
    await round()
    const warm = await heapAfterGc()
    const heaps: number[] = []
    for (let i = 1; i < ROUNDS; i++) {
      await round()
      heaps.push(await heapAfterGc())
    }
    const growth = Math.max(...heaps) - warm
    assert.ok(growth < 4 * MB, `the heap surviving GC grew by ${(growth / MB).toFixed(1)} MiB after the first round (${[warm, ...heaps].map(h => (h / MB).toFixed(1)).join(' → ')} MiB)`)
    recordResult('memory', {
      test: 'Heap kept after hostile load',
      injected: '1 MiB-ish bodies, 2 000-deep JSON, long queries and paths, many client addresses, requests abandoned at their deadline whose work answers late',
      count: ROUNDS * PER_ROUND,
      result: `heap after GC ${[warm, ...heaps].map(h => (h / MB).toFixed(1)).join(' → ')} MiB: no growth after the first round`,
    })
  })
})
