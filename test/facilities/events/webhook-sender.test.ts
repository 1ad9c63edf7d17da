import assert from 'node:assert/strict'
import { systemClock } from '../../../src/clock.ts'
import { createServer, type Server } from 'node:http'
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net'
import v8 from 'node:v8'
import vm from 'node:vm'
import { after, describe, it } from 'node:test'
import pino from 'pino'
import { Counter, Registry } from 'prom-client'
import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { retryDelay, WebhookSender, WebhookSigner } from '../../../src/facilities/events/webhook-sender.ts'
import { runnerOf } from '../../helper.ts'
import { type FreshStore, freshStore } from '../../support/store.ts'
import { until, untilValue } from '../../support/poll.ts'
import { before } from '../../support/hooks.ts'

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
  })

  function sender (opts: { allowLoopback: boolean, maxAttempts: number, timeoutMs?: number }) {
    const attempts = new Counter({ name: 'attempts', help: 'attempts', labelNames: ['outcome'], registers: [new Registry()] })
    const sending = new WebhookSender({ store: f.store, log: pino({ level: 'silent' }), secret: SECRET, retryBaseMs: 10, pollMs: 20, timeoutMs: opts.timeoutMs ?? 2000, attempts, clock: systemClock, ...opts })
    return { s: runnerOf(sending), attempts, sending }
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
    s.start()
    try {
      await until(async () => {
        gc()
        return (await counts(attempts)).failed === 1
      }, 'the attempt to be timed out', 5000)
    } finally {
      await s.stop()
    }
    assert.deepEqual(got, ['/slow'])
  })

  it('writes what the last batch got before stop() resolves, and hands back the attempt the stop cut, uncounted', async () => {
    got.length = 0
    // One batch: /ok answers, /slow never does, so the batch is still in flight (and what /ok got
    // still unwritten) when the sender stops.
    await f.store.webhooks.enqueue({ id: 'msg_at_stop', exportId: null, url: `http://127.0.0.1:${port}/ok`, payload: '{}' }, new Date())
    await f.store.webhooks.enqueue({ id: 'msg_cut', exportId: null, url: `http://127.0.0.1:${port}/slow`, payload: '{}' }, new Date())
    const { s, sending } = sender({ allowLoopback: true, maxAttempts: 1, timeoutMs: 60_000 })
    s.start()
    try {
      await until(async () => got.includes('/slow') && sending.unwritten === 1, "/ok's answer got, /slow's awaited")
    } finally {
      await s.stop()
    }
    const delivered = await f.store.webhooks.findById('msg_at_stop')
    assert.equal(delivered?.state, 'delivered')
    assert.equal(delivered?.lastStatusCode, 204)
    // Its one attempt was cut by the stop, not failed by the receiver: pending, due again, not counted.
    const cut = await f.store.webhooks.findById('msg_cut')
    assert.equal(cut?.state, 'pending')
    assert.equal(cut?.attempts, 0)
    assert.equal(cut?.lastError, 'the service stopped during the attempt')
    assert.equal(sending.unwritten, 0)
  })

  it('signs as the Standard Webhooks package does, and its verifier accepts the signature', () => {
    const bodies = ['{}', JSON.stringify({ id: '1', data: { title: 'Grüße 🌍 \u2028', content: 'x'.repeat(5000) } }), '']
    for (let i = 0; i < 20; i++) {
      const secret = `whsec_${randomBytes(1 + (i * 7) % 64).toString('base64')}`
      const at = new Date(1_700_000_000_000 + i * 123_457)
      for (const body of bodies) {
        const signature = new WebhookSigner(secret).sign(`msg_${i}`, at, body)
        assert.equal(signature, new Webhook(secret).sign(`msg_${i}`, at, body))
        if (body !== '') {
          assert.doesNotThrow(() => new Webhook(secret).verify(body, { 'webhook-id': `msg_${i}`, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': new WebhookSigner(secret).sign(`msg_${i}`, new Date(), body) }))
        }
      }
    }
    assert.throws(() => new WebhookSigner('whsec_'), /empty/)
  })

  it('backs off exponentially with full jitter, at most an hour', () => {
    assert.equal(retryDelay(1, 1000, () => 0.999), 999)
    assert.equal(retryDelay(4, 1000, () => 0.5), 4000)
    assert.equal(retryDelay(3, 1000, () => 0), 0)
    assert.equal(retryDelay(40, 1000, () => 0.5), 30 * 60_000)
  })
})

describe('WebhookSender: connections to receivers', () => {
  let f: FreshStore
  before(async () => { f = await freshStore('sqlite') })

  /** A receiver on a raw socket, its answer per request decided by `answer` (n: the request's number on its connection). */
  async function rawReceiver (answer: (socket: Socket, n: number, path: string) => void): Promise<{ url: (p: string) => string, connections: () => number, closed: () => number, close: () => Promise<void> }> {
    let connections = 0
    let closed = 0
    const sockets = new Set<Socket>()
    const server = createNetServer(socket => {
      connections++
      sockets.add(socket)
      socket.on('close', () => { closed++; sockets.delete(socket) })
      socket.on('error', () => {})
      let buffered = ''
      let n = 0
      socket.setEncoding('latin1')
      socket.on('data', (chunk: string) => {
        buffered += chunk
        for (;;) {
          const head = buffered.indexOf('\r\n\r\n')
          if (head < 0) return
          const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, head))?.[1] ?? 0)
          if (buffered.length < head + 4 + length) return
          const path = /^POST (\S+)/.exec(buffered)?.[1] ?? ''
          buffered = buffered.slice(head + 4 + length)
          answer(socket, ++n, path)
        }
      })
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    return {
      url: p => `http://127.0.0.1:${port}${p}`,
      connections: () => connections,
      closed: () => closed,
      close: async () => {
        for (const socket of sockets) socket.destroy()
        await new Promise(resolve => server.close(resolve))
      },
    }
  }

  function sender (timeoutMs = 2000) {
    const attempts = new Counter({ name: 'attempts', help: 'attempts', labelNames: ['outcome'], registers: [new Registry()] })
    const s = runnerOf(new WebhookSender({ store: f.store, log: pino({ level: 'silent' }), secret: SECRET, retryBaseMs: 10, pollMs: 20, timeoutMs, attempts, allowLoopback: true, maxAttempts: 1, clock: systemClock }))
    return { s, attempts }
  }

  async function deliverOne (id: string, url: string): Promise<string | undefined> {
    await f.store.webhooks.enqueue({ id, exportId: null, url, payload: '{}' }, new Date())
    return (await untilValue(async () => await f.store.webhooks.findById(id), d => d?.state !== 'pending', 5000))?.state
  }

  const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'

  it('sends one delivery after another over one connection', async () => {
    const rx = await rawReceiver(socket => { socket.write(OK) })
    const { s } = sender()
    s.start()
    try {
      for (let i = 0; i < 3; i++) assert.equal(await deliverOne(`ka_${i}`, rx.url('/ok')), 'delivered')
    } finally {
      await s.stop()
      await rx.close()
    }
    assert.equal(rx.connections(), 1)
  })

  it('closes the connection of an answer longer than it reads, and of a body that stalls past the deadline', async () => {
    const rx = await rawReceiver((socket, _n, path) => {
      if (path === '/big') socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${1 << 20}\r\n\r\n${'x'.repeat(1 << 20)}`)
      else if (path === '/stall') socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part')
      else socket.write(OK)
    })
    const { s } = sender(300)
    s.start()
    try {
      assert.equal(await deliverOne('ka_big', rx.url('/big')), 'delivered')
      await until(() => rx.closed() >= 1, 'the long answer\'s connection to be closed', 1000)
      assert.equal(rx.closed(), 1, 'the long answer\'s connection was closed')
      assert.equal(await deliverOne('ka_stall', rx.url('/stall')), 'delivered', 'the status is the outcome')
      await until(() => rx.closed() >= 2, 'the stalled body\'s connection to be cut', 2000)
      assert.equal(rx.closed(), 2, 'the stalled body\'s connection was cut by the deadline')
      assert.equal(await deliverOne('ka_after', rx.url('/ok')), 'delivered')
      assert.equal(rx.connections(), 3)
    } finally {
      await s.stop()
      await rx.close()
    }
  })

  it('sends again, on a new connection, when the receiver drops a kept connection as it is reused', async () => {
    // The second request on any connection is met with a reset: what a receiver closing an idle
    // connection at that moment looks like to the sender.
    const rx = await rawReceiver((socket, n) => { if (n === 1) socket.write(OK); else socket.resetAndDestroy() })
    const { s, attempts } = sender()
    s.start()
    try {
      assert.equal(await deliverOne('ka_first', rx.url('/ok')), 'delivered')
      assert.equal(await deliverOne('ka_reset', rx.url('/ok')), 'delivered')
    } finally {
      await s.stop()
    }
    await rx.close()
    assert.equal(rx.connections(), 2)
    assert.deepEqual(await counts(attempts), { delivered: 2 })
    assert.equal((await f.store.webhooks.findById('ka_reset'))?.attempts, 1)
  })
})
