import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import v8 from 'node:v8'
import vm from 'node:vm'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pino from 'pino'
import { Counter, Registry } from 'prom-client'
import { retryDelay, WebhookSender } from '../../src/jobs/webhook-sender.ts'
import { type FreshStore, freshStore } from '../store/store-helper.ts'

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`

async function counts (c: Counter<'outcome'>): Promise<Record<string, number>> {
  return Object.fromEntries((await c.get()).values.map(v => [String(v.labels.outcome), v.value]))
}

describe('WebhookSender', () => {
  let f: FreshStore
  let server: Server
  let port: number
  const got: string[] = []
  before(async () => {
    f = await freshStore('sqlite')
    // Answers /slow never; everything else 204.
    server = createServer((req, res) => {
      got.push(req.url ?? '')
      if (req.url === '/slow') return
      res.statusCode = 204
      res.end()
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
    await f.close()
  })

  function sender (opts: { allowLoopback: boolean, maxAttempts: number, timeoutMs?: number }) {
    const attempts = new Counter({ name: 'attempts', help: 'attempts', labelNames: ['outcome'], registers: [new Registry()] })
    const s = new WebhookSender({ store: f.store, log: pino({ level: 'silent' }), secret: SECRET, retryBaseMs: 10, pollMs: 20, timeoutMs: opts.timeoutMs ?? 2000, attempts, ...opts })
    return { s, attempts }
  }

  async function until (cond: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 60_000
    while (!await cond()) {
      assert.ok(Date.now() < deadline, `timed out waiting for ${what}`)
      await sleep(20)
    }
  }

  it('checks the address again when delivering: a name or literal that is loopback now is refused', async () => {
    got.length = 0
    await f.store.webhooks.enqueue({ id: 'msg_rebound_name', exportId: null, url: `http://localhost:${port}/name`, payload: '{}' }, new Date())
    await f.store.webhooks.enqueue({ id: 'msg_rebound_ip', exportId: null, url: `http://127.0.0.1:${port}/ip`, payload: '{}' }, new Date())
    const { s, attempts } = sender({ allowLoopback: false, maxAttempts: 1 })
    s.start()
    try {
      await until(async () => (await counts(attempts)).failed === 2, 'two refusals')
    } finally {
      await s.stop()
    }
    assert.deepEqual(got, [], 'nothing reached the receiver')
  })

  it('counts an attempt that gets no answer in time as failed, and retries it', async () => {
    got.length = 0
    await f.store.webhooks.enqueue({ id: 'msg_slow', exportId: null, url: `http://127.0.0.1:${port}/slow`, payload: '{}' }, new Date())
    const { s, attempts } = sender({ allowLoopback: true, maxAttempts: 2, timeoutMs: 200 })
    s.start()
    try {
      await until(async () => (await counts(attempts)).failed === 1, 'the last attempt')
    } finally {
      await s.stop()
    }
    assert.deepEqual(await counts(attempts), { retry: 1, failed: 1 })
    assert.deepEqual(got, ['/slow', '/slow'])
  })

  it('gives up on a receiver that never answers even when garbage collection runs during the attempt', async () => {
    // Node can collect a timeout signal held only by AbortSignal.any() before it fires
    // (nodejs/node#57736); the attempt then waited for ever. Collections are forced here.
    v8.setFlagsFromString('--expose-gc')
    const gc = vm.runInNewContext('gc') as () => void
    got.length = 0
    await f.store.webhooks.enqueue({ id: 'msg_slow_gc', exportId: null, url: `http://127.0.0.1:${port}/slow`, payload: '{}' }, new Date())
    const { s, attempts } = sender({ allowLoopback: true, maxAttempts: 1, timeoutMs: 300 })
    const started = Date.now()
    s.start()
    try {
      while ((await counts(attempts)).failed !== 1) {
        assert.ok(Date.now() - started < 5000, 'the attempt was never timed out')
        gc()
        await sleep(20)
      }
    } finally {
      await s.stop()
    }
    assert.deepEqual(got, ['/slow'])
  })

  it('backs off exponentially with full jitter, at most an hour', () => {
    assert.equal(retryDelay(1, 1000, () => 0.999), 999)
    assert.equal(retryDelay(4, 1000, () => 0.5), 4000)
    assert.equal(retryDelay(3, 1000, () => 0), 0)
    assert.equal(retryDelay(40, 1000, () => 0.5), 30 * 60_000)
  })
})
