import assert from 'node:assert/strict'
import net from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, json, PG_ADMIN_URL, storeKinds, type TestApp } from '../../helper.ts'
import { until } from '../../support/poll.ts'
import { createPost, writeOver } from '../../support/posts.ts'
import { before } from '../../support/hooks.ts'

function assertProblem (res: LightMyRequestResponse, status: number, code: string): void {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.equal(json(res).code, code)
  if (status === 503) assert.ok(Number(res.headers['retry-after']) > 0, 'Retry-After on a 503')
}

describe('REQUEST_TIMEOUT_MS', () => {
  let b: TestApp
  let abandoned: Promise<unknown>
  let lateSend: Promise<void>
  before(async () => {
    b = await buildTestApp('sqlite', { REQUEST_TIMEOUT_MS: '300' }, {
      extend: app => {
        app.get('/test/slow', { schema: { hide: true } }, async (req, reply) => {
          abandoned = new Promise(resolve => req.abandoned.addEventListener('abort', () => resolve(req.abandoned.reason), { once: true }))
          await abandoned
          // The work carries on regardless and answers late: the answer must be dropped, not crash.
          lateSend = (async () => { await reply.send({ late: true }) })()
          return reply
        })
        // What a write does once its unit of work is committing (src/http/toolkit/write.ts, unitOptions).
        app.get('/test/committing', { schema: { hide: true } }, async (req) => {
          req.commitStarted()
          // Real time on purpose: a commit that outlasts the request's deadline (300 ms).
          await sleep(700)
          return { committed: !req.abandoned.aborted }
        })
        app.get('/test/slow-throw', { schema: { hide: true } }, async (req) => {
          await new Promise(resolve => req.abandoned.addEventListener('abort', resolve, { once: true }))
          throw new Error('failed after the deadline')
        })
      },
    })
  })

  it('answers 503 REQUEST_TIMEOUT with Retry-After and aborts req.abandoned', async () => {
    const res = await b.app.inject({ method: 'GET', url: '/test/slow' })
    assertProblem(res, 503, 'REQUEST_TIMEOUT')
    assert.equal(json(res).instance, '/test/slow')
    const reason = await abandoned
    assert.equal((reason as { code?: string }).code, 'REQUEST_TIMEOUT')
    await lateSend
  })

  it('no longer applies once the writes of the request are being committed: the answer is the commit', async () => {
    // A 503 then would say nothing changed of a write about to be committed (on SQLite, at the
    // end of the loop's turn, which can fall after a timer's deadline).
    const res = await b.app.inject({ method: 'GET', url: '/test/committing' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(json(res), { committed: true })
  })

  it('survives work that fails after its request was abandoned', async () => {
    assertProblem(await b.app.inject({ method: 'GET', url: '/test/slow-throw' }), 503, 'REQUEST_TIMEOUT')
    // Real time on purpose: the abandoned work's late failure gets its turns; nothing else shows it came.
    await sleep(50)
    assert.equal((await b.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
    assert.equal((await b.app.inject({ method: 'GET', url: '/posts' })).statusCode, 200)
  })
})

describe('the end of a graceful shutdown', () => {
  it('answers every request still in flight with 503 and aborts its work', async () => {
    let aborted: unknown
    let started = false
    const t = await buildTestApp('sqlite', {}, {
      extend: app => {
        app.get('/test/forever', { schema: { hide: true } }, async (req) => {
          started = true
          await new Promise(resolve => { req.abandoned.addEventListener('abort', resolve) })
          aborted = req.abandoned.reason
          return { never: 'sent' }
        })
      },
    })
    const pending = t.app.inject({ method: 'GET', url: '/test/forever' })
    await until(() => started, 'the request to be in flight', 5000)
    t.context.inFlight.abandonAll()
    const res = await pending
    assertProblem(res, 503, 'SERVICE_UNAVAILABLE')
    assert.match(json(res).detail, /shutting down/)
    await until(() => aborted !== undefined, 'the work to be told to stop', 1000)
  })
})

for (const kind of await storeKinds()) {
  describe(`abandoned writes [${kind}]`, () => {
    it('never commits a write whose request was abandoned', async () => {
      const t = await buildTestApp(kind)
      const gone = AbortSignal.abort(new Error('abandoned'))
      await assert.rejects(t.store.transaction(async uow => await createPost(uow, { title: 'late' }), { signal: gone }))
      const p = await createPost(t.store, { title: 'kept' })
      // The signal fires while the work runs: what it wrote is rolled back.
      const controller = new AbortController()
      await assert.rejects(t.store.transaction(async uow => {
        await uow.posts.replace(p.id, writeOver(p, { title: 'late' }), p.revision, new Date())
        controller.abort(new Error('client gone'))
        await createPost(uow, { title: 'late' })
      }, { signal: controller.signal }))
      assert.equal((await t.store.posts.findById(p.id, null))?.title, 'kept')
      await t.searchIndexed()
      assert.equal((await t.store.posts.list({ filter: { q: 'late' }, sort: [{ key: 'id', direction: 'asc' }], limit: 10 }, null)).items.length, 0)
    })
  })

  if (kind === 'postgres') {
    describe('a write that outlives its request [postgres]', () => {
      it('is rolled back: the 503 REQUEST_TIMEOUT is the whole truth', async () => {
        const t = await buildTestApp('postgres', { REQUEST_TIMEOUT_MS: '500' })
        const pg = await import('pg')
        const locker = new pg.default.Client({ connectionString: (t.config.databaseUrl) })
        await locker.connect()
        try {
          await locker.query('BEGIN')
          await locker.query('LOCK TABLE posts IN ACCESS EXCLUSIVE MODE')
          const pending = t.app.inject({ method: 'POST', url: '/posts', headers: await t.auth('alice'), payload: { title: 'during-timeout', content: '' } })
          const res = await pending
          assertProblem(res, 503, 'REQUEST_TIMEOUT')
          // Real time on purpose: the lock is held a while past the 503, while the abandoned insert waits for it.
          await sleep(200)
          await locker.query('COMMIT')
          const name = new URL(t.config.databaseUrl).pathname.slice(1)
          await until(async () => (await locker.query("SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'blog-post-service' AND state <> 'idle'", [name])).rowCount === 0,
            'the abandoned insert to end', 5000)
          const rows = await locker.query("SELECT count(*)::int AS n FROM posts WHERE title = 'during-timeout'")
          assert.equal(rows.rows[0].n, 0, 'the insert that waited for the lock was rolled back')
        } finally {
          await locker.end()
        }
      })

      it('answers 503, not 500, while the database refuses connections', async () => {
        const t = await buildTestApp('postgres')
        const pg = await import('pg')
        const name = new URL(t.config.databaseUrl).pathname.slice(1)
        const admin = new pg.default.Client({ connectionString: PG_ADMIN_URL })
        await admin.connect()
        try {
          await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
          await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])
          await until(async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE datname = $1', [name])).rowCount === 0, 'its connections to end', 5000)
          assertProblem(await t.app.inject({ method: 'GET', url: '/posts' }), 503, 'SERVICE_UNAVAILABLE')
          assertProblem(await t.app.inject({ method: 'GET', url: '/readyz' }), 503, 'SERVICE_UNAVAILABLE')
          assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'alive, though not ready')
        } finally {
          await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
          await admin.end()
        }
      })
    })
  }

  describe(`store unreachable [${kind}]`, () => {
    it('answers 503 SERVICE_UNAVAILABLE with Retry-After, not 500, once the store is closed', async () => {
      const b = await buildTestApp(kind, {})
      const auth = await b.auth('alice', ['posts:write'])
      const created = await b.app.inject({ method: 'POST', url: '/posts', headers: auth, payload: { title: 't', content: '' } })
      assert.equal(created.statusCode, 201)
      await b.store.close()
      assertProblem(await b.app.inject({ method: 'GET', url: '/posts' }), 503, 'SERVICE_UNAVAILABLE')
      assertProblem(await b.app.inject({ method: 'GET', url: `/posts/${json(created).id}` }), 503, 'SERVICE_UNAVAILABLE')
      assertProblem(await b.app.inject({ method: 'POST', url: '/posts', headers: auth, payload: { title: 't', content: '' } }), 503, 'SERVICE_UNAVAILABLE')
      assertProblem(await b.app.inject({ method: 'GET', url: '/readyz' }), 503, 'SERVICE_UNAVAILABLE')
    })
  })
}

if ((await storeKinds()).includes('postgres')) {
  describe('PostgreSQL unreachable [postgres]', () => {
    let proxy: net.Server
    const sockets = new Set<net.Socket>()
    let b: TestApp
    before(async () => {
      // A TCP relay to PostgreSQL that the test can cut, as a network failure would.
      proxy = net.createServer(client => {
        const upstream = net.connect(5432, '127.0.0.1')
        sockets.add(client).add(upstream)
        client.pipe(upstream).pipe(client)
        client.on('error', () => upstream.destroy())
        upstream.on('error', () => client.destroy())
      })
      await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve))
      const port = (proxy.address() as net.AddressInfo).port
      b = await buildTestApp('postgres', {}, {
        url: u => {
          const url = new URL(u)
          url.host = `127.0.0.1:${port}`
          return url.toString()
        },
      })
    })

    it('answers 503 with Retry-After when connections are refused', async () => {
      assert.equal((await b.app.inject({ method: 'GET', url: '/posts' })).statusCode, 200)
      await new Promise(resolve => {
        proxy.close(resolve)
        for (const s of sockets) s.destroy()
      })
      // A read the public answers cache has not kept: that one may answer /posts for up to a second more.
      const res = await b.app.inject({ method: 'GET', url: '/posts?limit=5' })
      assertProblem(res, 503, 'SERVICE_UNAVAILABLE')
      assertProblem(await b.app.inject({ method: 'GET', url: '/readyz' }), 503, 'SERVICE_UNAVAILABLE')
    })
  })
}

describe('request size limits', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite') })

  it('answers 413 PAYLOAD_TOO_LARGE to a body over 1 MiB', async () => {
    const res = await t.request({ method: 'POST', url: '/posts', headers: await t.auth('alice'), payload: { title: 'big', content: 'x'.repeat(1024 * 1024 + 1) } })
    assertProblem(res, 413, 'PAYLOAD_TOO_LARGE')
  })

  /** A valid post of exactly `bytes` bytes: the largest content allowed, padded with JSON white space. */
  function bodyOf (bytes: number): string {
    const doc = JSON.stringify({ title: 'edge', content: '\u00e9'.repeat(100_000) })
    return doc.slice(0, -1) + ' '.repeat(bytes - Buffer.byteLength(doc)) + '}'
  }

  it('accepts a body of exactly 1 MiB and refuses one byte more, over a real socket too', async () => {
    const auth = await t.auth('alice')
    const headers = { ...auth, 'content-type': 'application/json' }
    assert.equal(Buffer.byteLength(bodyOf(1024 * 1024)), 1024 * 1024)
    const atLimit = await t.request({ method: 'POST', url: '/posts', headers, payload: bodyOf(1024 * 1024) })
    assert.equal(atLimit.statusCode, 201, atLimit.body)
    assert.equal(json(atLimit).content.length, 100_000)
    assertProblem(await t.request({ method: 'POST', url: '/posts', headers, payload: bodyOf(1024 * 1024 + 1) }), 413, 'PAYLOAD_TOO_LARGE')
    // Chunked, without Content-Length: the limit is counted as the bytes arrive.
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (t.app.server.address() as net.AddressInfo).port
    for (const [bytes, status] of [[1024 * 1024, 201], [1024 * 1024 + 1, 413]] as const) {
      const body = Buffer.from(bodyOf(bytes))
      const res = await fetch(`http://127.0.0.1:${port}/posts`, {
        method: 'POST',
        headers,
        body: new ReadableStream({ start (c) { c.enqueue(body.subarray(0, 1000)); c.enqueue(body.subarray(1000)); c.close() } }),
        duplex: 'half',
      } as RequestInit)
      assert.equal(res.status, status, `${bytes} bytes, chunked`)
      await res.arrayBuffer()
    }
  })

  it('answers 414 URI_TOO_LONG to a path or query over 8 KiB, before routing or authentication', async () => {
    assertProblem(await t.app.inject({ method: 'GET', url: `/posts?q=${'a'.repeat(8200)}` }), 414, 'URI_TOO_LONG')
    assertProblem(await t.app.inject({ method: 'GET', url: `/${'p'.repeat(8200)}` }), 414, 'URI_TOO_LONG')
    assertProblem(await t.app.inject({ method: 'POST', url: `/posts?${'a'.repeat(8200)}`, headers: { authorization: 'Bearer nonsense' }, payload: {} }), 414, 'URI_TOO_LONG')
    assert.notEqual((await t.app.inject({ method: 'GET', url: `/posts?q=${'a'.repeat(8000)}` })).statusCode, 414, 'under the limit')
  })

  describe('over a real socket', () => {
    let port: number
    before(async () => {
      if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' })
      port = (t.app.server.address() as net.AddressInfo).port
    })

    /** Writes raw bytes and reads until the server closes the connection (or 5 s pass). */
    async function raw (request: string): Promise<{ status: number, headers: Record<string, string>, body: string }> {
      const text = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1')
        const chunks: Buffer[] = []
        socket.setTimeout(5000, () => { socket.destroy(); reject(new Error('the server neither answered nor closed')) })
        socket.on('data', c => chunks.push(c))
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
        socket.on('error', () => {})
        socket.write(request)
      })
      const [head = '', body = ''] = text.split('\r\n\r\n', 2)
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      return { status: Number(statusLine.split(' ')[1]), headers, body }
    }

    it('answers 431 HEADERS_TOO_LARGE as a problem when the headers exceed 16 KiB', async () => {
      const res = await raw(`GET /posts HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`)
      assert.equal(res.status, 431)
      assert.equal(res.headers['content-type'], 'application/problem+json')
      const problem = JSON.parse(res.body)
      assert.equal(problem.code, 'HEADERS_TOO_LARGE')
      assert.equal(problem.status, 431)
      assert.equal(problem.instance, '/posts')
      assert.match(problem.request_id, /^[0-9a-f-]{36}$/)
      assert.equal(res.headers['x-request-id'], problem.request_id)
      assert.equal(res.headers.traceparent?.split('-')[1], problem.trace_id, 'a new trace, echoed like any other')
      assert.equal(Buffer.byteLength(res.body), Number(res.headers['content-length']))
    })

    it('answers 400 BAD_REQUEST as a problem to a request Node cannot parse', async () => {
      const res = await raw('NOT HTTP AT ALL\r\n\r\n')
      assert.equal(res.status, 400)
      assert.equal(JSON.parse(res.body).code, 'BAD_REQUEST')
    })

    it('keeps serving after refusing them', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`)
      assert.equal(res.status, 200)
    })
  })
})
