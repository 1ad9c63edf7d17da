import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { until, untilValue } from '../../support/poll.ts'
import { before } from '../../support/hooks.ts'

const SECRET = `whsec_${Buffer.alloc(32, 42).toString('base64')}`
const FAST = { WEBHOOK_SECRET: SECRET, WEBHOOK_ALLOW_LOOPBACK: '1', EXPORT_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '20', WEBHOOK_TIMEOUT_MS: '2000' }

type Headers = Record<string, string>

/** Polls the job until it has finished, checking Retry-After on every unfinished answer. */
async function finished (t: TestApp, url: string, headers: Headers): Promise<any> {
  const read = async () => {
    const res = await t.request({ method: 'GET', url, headers })
    assert.equal(res.statusCode, 200, res.body)
    return { job: json(res), retryAfter: res.headers['retry-after'] }
  }
  const done = (r: { job: any, retryAfter: unknown }) => {
    const over = r.job.status === 'succeeded' || r.job.status === 'failed'
    assert.equal(r.retryAfter, over ? undefined : '1')
    return over
  }
  return (await untilValue(read, done, 60_000)).job
}

function lines (body: string): unknown[] {
  return body.split('\n').filter(Boolean).map(l => JSON.parse(l) as unknown)
}

/** A webhook receiver on 127.0.0.1 answering with `statuses` in turn (then 204), recording every request. */
async function receiver (statuses: number[] = []): Promise<{ url: string, got: { headers: IncomingMessage['headers'], body: string }[], close: () => Promise<void> }> {
  const got: { headers: IncomingMessage['headers'], body: string }[] = []
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(parts).toString('utf8') })
      res.statusCode = statuses.shift() ?? 204
      res.end()
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/hooks`, got, close: async () => { await new Promise(resolve => server.close(resolve)) } }
}

for (const kind of await storeKinds()) {
  describe(`exports [${kind}]`, () => {
    let t: TestApp
    let admin: Headers
    let other: Headers

    before(async () => {
      t = await buildTestApp(kind, FAST)
      admin = await t.auth('root', ['admin'])
      other = await t.auth('other-admin', ['admin'])
      const alice = await t.auth('alice', ['posts:write'])
      const bob = await t.auth('bob', ['posts:write'])
      for (let i = 0; i < 7; i++) {
        const status = ['published', 'draft', 'archived'][i % 3]!
        await t.request({ method: 'POST', url: '/posts', headers: i % 2 ? alice : bob, payload: { title: `post ${i}`, content: `body ${i} ✓`, status } })
      }
    })

    async function create (payload: object, headers: Headers = admin, url = '/exports') {
      return await t.request({ method: 'POST', url, headers, payload })
    }

    async function allPosts (prefix = ''): Promise<unknown[]> {
      const ids = json(await t.request({ method: 'GET', url: '/posts?sort=id&limit=100', headers: admin })).map((p: { id: number }) => p.id)
      return await Promise.all(ids.map(async (id: number) => json(await t.request({ method: 'GET', url: `${prefix}/posts/${id}`, headers: admin }))))
    }

    it('answers 202 with the job and Location, then runs it to completion; the file holds every post, as GET shows them', async () => {
      const res = await create({ format: 'ndjson' })
      assert.equal(res.statusCode, 202)
      const job = json(res)
      assert.equal(res.headers.location, `/exports/${job.id}`)
      assert.equal(res.headers['cache-control'], 'private, no-store')
      assert.ok(['pending', 'running', 'succeeded'].includes(job.status))
      assert.equal(job._links.self.href, `/exports/${job.id}`)

      const done = await finished(t, res.headers.location!, admin)
      assert.equal(done.status, 'succeeded')
      assert.equal(done.progress, 100)
      assert.equal(done._links.download.href, `/exports/${job.id}/file`)
      assert.equal(done.exported, 7)

      const read = await t.request({ method: 'GET', url: `/exports/${job.id}`, headers: admin })
      assert.equal(read.headers['cache-control'], 'private, no-store')
      const again = await t.request({ method: 'GET', url: `/exports/${job.id}`, headers: { ...admin, 'if-none-match': String(read.headers.etag) } })
      assert.equal(again.statusCode, 304)

      const file = await t.request({ method: 'GET', url: done._links.download.href, headers: admin })
      assert.equal(file.statusCode, 200)
      assert.equal(file.headers['content-type'], 'application/x-ndjson')
      assert.equal(file.headers['accept-ranges'], 'bytes')
      assert.equal(file.headers['cache-control'], 'private, no-store')
      assert.equal(Number(file.headers['content-length']), done.size)
      assert.equal(file.rawPayload.length, done.size)
      assert.match(String(file.headers.etag), /^"[A-Za-z0-9_-]{43}"$/)
      assert.deepEqual(lines(file.body), await allPosts())
    })

    it('honours filter.status', async () => {
      const res = await create({ format: 'ndjson', filter: { status: 'draft' } })
      const done = await finished(t, res.headers.location!, admin)
      assert.deepEqual(done.filter, { status: 'draft' })
      const file = await t.request({ method: 'GET', url: `/exports/${done.id}/file`, headers: admin })
      const drafts = (await allPosts()).filter(p => (p as { status: string }).status === 'draft')
      assert.ok(drafts.length > 0)
      assert.deepEqual(lines(file.body), drafts)
    })

    it('under version 2 names the identifier exportId, and the lines are version 2 posts', async () => {
      const res = await create({ format: 'ndjson' }, admin, '/v2/exports')
      assert.equal(res.statusCode, 202)
      const job = json(res)
      assert.equal(job.id, undefined)
      assert.equal(res.headers.location, `/v2/exports/${job.exportId}`)
      const done = await finished(t, res.headers.location!, admin)
      assert.equal(done._links.download.href, `/v2/exports/${job.exportId}/file`)
      const file = await t.request({ method: 'GET', url: done._links.download.href, headers: admin })
      assert.deepEqual(lines(file.body), await allPosts('/v2'))
    })

    it('an export is its creator\'s: another admin gets 404, others 403, anonymous callers 401', async () => {
      const done = await finished(t, (await create({ format: 'ndjson' })).headers.location!, admin)
      for (const url of [`/exports/${done.id}`, `/exports/${done.id}/file`]) {
        const res = await t.request({ method: 'GET', url, headers: other })
        assert.equal(res.statusCode, 404)
        assert.equal(json(res).code, 'EXPORT_NOT_FOUND')
      }
      assert.equal((await t.request({ method: 'GET', url: '/exports/999999', headers: admin })).statusCode, 404)
      assert.equal((await create({ format: 'ndjson' }, await t.auth('alice', ['posts:write']))).statusCode, 403)
      assert.equal((await create({ format: 'ndjson' }, {})).statusCode, 401)
      assert.equal((await t.request({ method: 'GET', url: `/exports/${done.id}`, headers: await t.auth('alice', ['posts:write']) })).statusCode, 403)
      assert.equal((await t.request({ method: 'GET', url: '/exports/abc', headers: admin })).statusCode, 422)
    })

    it('replays the first answer for a repeated Idempotency-Key and makes no second job', async () => {
      const headers = { ...admin, 'idempotency-key': `export-${kind}` }
      const first = await create({ format: 'ndjson' }, headers)
      const second = await create({ format: 'ndjson' }, headers)
      assert.equal(second.statusCode, 202)
      assert.equal(second.headers['idempotent-replayed'], 'true')
      assert.equal(second.body, first.body)
      assert.equal(second.headers.location, first.headers.location)
      const next = await create({ format: 'ndjson' })
      assert.equal(json(next).id, json(first).id + 1)
      // Let both finish, so that the tests below see only their own runs.
      await finished(t, first.headers.location!, admin)
      await finished(t, next.headers.location!, admin)
    })

    it('refuses bad bodies with 422 naming the field', async () => {
      const cases: [object, string][] = [
        [{ format: 'csv' }, 'format'],
        [{}, 'format'],
        [{ format: 'ndjson', filter: { status: 'gone' } }, 'filter/status'],
        [{ format: 'ndjson', colour: 'red' }, 'colour'],
        [{ format: 'ndjson', callback_url: 'ftp://example.com/x' }, 'callback_url'],
        [{ format: 'ndjson', callback_url: 'not a url' }, 'callback_url'],
        [{ format: 'ndjson', callback_url: 'http://user:pw@127.0.0.1/x' }, 'callback_url'],
      ]
      for (const [payload, field] of cases) {
        const res = await create(payload)
        assert.equal(res.statusCode, 422, JSON.stringify(payload))
        assert.ok(json(res).errors.some((e: { field: string }) => e.field === field), `${JSON.stringify(payload)}: ${res.body}`)
      }
    })

    it('takes up a run whose worker died once its lease expires, starts afresh and writes the whole file once', async () => {
      // A worker of a process that then died: it claimed the job, wrote part of the file, and stopped.
      const leaseMs = 3000
      const lease = await t.store.transaction(async uow => {
        await uow.exports.create('root', { format: 'ndjson', filter: {}, callbackUrl: null }, { apiVersion: 1, linkBase: '' }, new Date())
        return await uow.exports.claim(new Date(), leaseMs, 3)
      })
      assert.ok(lease)
      const until = new Date(Date.now() + leaseMs)
      await t.store.exports.begin(lease, 4, until, new Date())
      await t.store.exports.append(lease, { seq: 0, start: 0, data: Buffer.from('{"half a line') }, 2, until, new Date())

      const url = `/exports/${lease.job.id}`
      const running = json(await t.request({ method: 'GET', url, headers: admin }))
      assert.equal(running.status, 'running')
      assert.equal(running.progress, 50)
      const done = await finished(t, url, admin)
      assert.equal(done.status, 'succeeded')
      assert.ok(Date.now() >= until.getTime(), 'not taken over while the lease held')
      assert.equal((await t.store.exports.findById(lease.job.id, 'root'))?.attempts, 2)
      const file = await t.request({ method: 'GET', url: `${url}/file`, headers: admin })
      assert.deepEqual(lines(file.body), await allPosts())
      assert.ok(!file.body.includes('half a line'))
    })

    if (kind === 'postgres') {
      it('with two instances on one database, runs each job exactly once; either instance serves the file', async () => {
        const b = await buildTestApp('postgres', FAST, { url: () => t.config.databaseUrl })
        const hook = await receiver()
        const succeeded = async (app: TestApp) => Number(/export_runs_total\{outcome="succeeded"\} (\d+)/.exec(await app.scrape())?.[1] ?? 0)
        try {
          const before = await succeeded(t)
          const urls: string[] = []
          for (let i = 0; i < 6; i++) {
            const res = await (i % 2 === 0 ? t : b).request({ method: 'POST', url: '/exports', headers: admin, payload: { format: 'ndjson', callback_url: hook.url } })
            assert.equal(res.statusCode, 202)
            urls.push(res.headers.location!)
          }
          const expected = await allPosts()
          for (const url of urls) {
            const done = await finished(t, url, admin)
            assert.equal(done.status, 'succeeded')
            assert.equal((await t.store.exports.findById(done.id, 'root'))?.attempts, 1, 'one run')
            const fromA = await t.request({ method: 'GET', url: `${url}/file`, headers: admin })
            const fromB = await b.request({ method: 'GET', url: `${url}/file`, headers: admin })
            assert.equal(fromA.body, fromB.body)
            assert.equal(fromA.headers.etag, fromB.headers.etag)
            assert.deepEqual(lines(fromA.body), expected)
          }
          assert.equal(await succeeded(t) - before + await succeeded(b), 6)
          await until(() => hook.got.length >= 6, 'six webhooks')
          // None is pending any more, so none is still to come: no wait to see that nothing comes.
          await until(async () => (await t.store.webhooks.backlog()).pending === 0, 'no delivery pending')
          assert.equal(hook.got.length, 6)
          assert.equal(new Set(hook.got.map(g => g.headers['webhook-id'])).size, 6)
        } finally {
          await hook.close()
        }
      })
    }

    describe('GET /exports/{id}/file with ranges', () => {
      let url: string
      let whole: Buffer
      let etag: string

      before(async () => {
        // Large enough to span several stored chunks (256 KiB each).
        const writer = await t.auth('writer', ['posts:write'])
        for (let i = 0; i < 12; i++) {
          await t.request({ method: 'POST', url: '/posts', headers: writer, payload: { title: `big ${i}`, content: `${i}`.repeat(60_000) + 'é' } })
        }
        const done = await finished(t, (await create({ format: 'ndjson' })).headers.location!, admin)
        url = done._links.download.href
        const res = await t.request({ method: 'GET', url, headers: admin })
        whole = res.rawPayload
        etag = String(res.headers.etag)
        assert.ok(whole.length > 600_000 && whole.length === done.size)
      })

      async function get (headers: Headers, method: 'GET' | 'HEAD' = 'GET') {
        return await t.request({ method, url, headers: { ...admin, ...headers } })
      }

      it('answers bytes=a-b, a- and -n with 206 and Content-Range, across chunk boundaries', async () => {
        const n = whole.length
        const cases: [string, number, number][] = [
          ['bytes=0-9', 0, 9],
          ['bytes=262140-262150', 262140, 262150],
          ['bytes=100000-', 100000, n - 1],
          ['bytes=-300000', n - 300000, n - 1],
          ['bytes=5-5', 5, 5],
          [`bytes=${n - 1}-${n + 100}`, n - 1, n - 1],
        ]
        for (const [range, from, to] of cases) {
          const res = await get({ range })
          assert.equal(res.statusCode, 206, range)
          assert.equal(res.headers['content-range'], `bytes ${from}-${to}/${n}`, range)
          assert.equal(Number(res.headers['content-length']), to - from + 1, range)
          assert.equal(res.headers.etag, etag)
          assert.ok(res.rawPayload.equals(whole.subarray(from, to + 1)), range)
        }
      })

      it('merges ranges that touch; several apart get the whole file with 200', async () => {
        const merged = await get({ range: 'bytes=0-4,5-9' })
        assert.equal(merged.statusCode, 206)
        assert.equal(merged.headers['content-range'], `bytes 0-9/${whole.length}`)
        const apart = await get({ range: 'bytes=0-4,100-109' })
        assert.equal(apart.statusCode, 200)
        assert.ok(apart.rawPayload.equals(whole))
      })

      it('honours If-Range only with the current ETag', async () => {
        const same = await get({ range: 'bytes=0-9', 'if-range': etag })
        assert.equal(same.statusCode, 206)
        const stale = await get({ range: 'bytes=0-9', 'if-range': '"not-the-tag"' })
        assert.equal(stale.statusCode, 200)
        assert.equal(stale.headers['content-range'], undefined)
        assert.ok(stale.rawPayload.equals(whole))
        const weak = await get({ range: 'bytes=0-9', 'if-range': `W/${etag}` })
        assert.equal(weak.statusCode, 200)
      })

      it('answers 416 with Content-Range bytes */length when nothing asked for lies in the file', async () => {
        for (const range of [`bytes=${whole.length}-`, `bytes=${whole.length + 10}-${whole.length + 20}`]) {
          const res = await get({ range })
          assert.equal(res.statusCode, 416, range)
          assert.equal(res.headers['content-range'], `bytes */${whole.length}`)
          assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
          assert.equal(json(res).code, 'RANGE_NOT_SATISFIABLE')
        }
      })

      it('ignores a malformed Range or another unit, and sends the whole file', async () => {
        for (const range of ['bytes=abc', 'items=0-5', 'bytes=9-2']) {
          const res = await get({ range })
          assert.equal(res.statusCode, 200, range)
          assert.equal(res.rawPayload.length, whole.length)
        }
      })

      it('answers HEAD with the headers alone, and If-None-Match with 304', async () => {
        const head = await get({}, 'HEAD')
        assert.equal(head.statusCode, 200)
        assert.equal(Number(head.headers['content-length']), whole.length)
        assert.equal(head.headers['accept-ranges'], 'bytes')
        assert.equal(head.headers.etag, etag)
        assert.equal(head.rawPayload.length, 0)
        const part = await get({ range: 'bytes=0-99' }, 'HEAD')
        assert.equal(part.statusCode, 206)
        assert.equal(part.headers['content-range'], `bytes 0-99/${whole.length}`)
        assert.equal((await get({ 'if-none-match': etag })).statusCode, 304)
      })

      it('takes Accept: application/x-ndjson', async () => {
        const res = await get({ accept: 'application/x-ndjson', range: 'bytes=0-0' })
        assert.equal(res.statusCode, 206)
      })
    })

    describe('webhooks', () => {
      it('POSTs export.succeeded, signed per Standard Webhooks, after the job has finished', async () => {
        const hook = await receiver()
        try {
          const res = await create({ format: 'ndjson', callback_url: hook.url })
          assert.equal(res.statusCode, 202)
          assert.equal(json(res).callback_url, hook.url)
          await until(() => hook.got.length > 0, 'the webhook')
          const [msg] = hook.got
          const payload = new Webhook(SECRET).verify(msg!.body, msg!.headers as Record<string, string>) as { type: string, data: { id: number, status: string } }
          assert.equal(payload.type, 'export.succeeded')
          assert.equal(payload.data.id, json(res).id)
          assert.equal(payload.data.status, 'succeeded')
          assert.match(String(msg!.headers['webhook-id']), /^msg_/)
          assert.match(String(msg!.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/)
          // The state it announces is already what a poll sees.
          assert.equal(json(await t.request({ method: 'GET', url: res.headers.location!, headers: admin })).status, 'succeeded')
          assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(msg!.body, msg!.headers as Record<string, string>))
        } finally {
          await hook.close()
        }
      })

      it('retries a failing receiver with the same Webhook-Id until it answers 2xx, and counts the attempts', async () => {
        const hook = await receiver([500, 503])
        try {
          await create({ format: 'ndjson', callback_url: hook.url })
          await until(() => hook.got.length === 3, 'three attempts')
          const ids = new Set(hook.got.map(g => g.headers['webhook-id']))
          assert.equal(ids.size, 1)
          for (const g of hook.got) new Webhook(SECRET).verify(g.body, g.headers as Record<string, string>)
          assert.equal(new Set(hook.got.map(g => g.body)).size, 1)
          await until(async () => (await t.store.webhooks.backlog()).pending === 0, 'no delivery pending')
          assert.equal(hook.got.length, 3, 'nothing more once delivered: none is pending')
          const metrics = await t.scrape()
          assert.match(metrics, /webhook_delivery_attempts_total\{outcome="retry"\} [2-9]/)
          assert.match(metrics, /webhook_delivery_attempts_total\{outcome="delivered"\} [1-9]/)
        } finally {
          await hook.close()
        }
      })
    })
  })
}

describe('exports: callback URLs (no server-side request forgery)', () => {
  let t: TestApp
  let admin: Headers
  // No WEBHOOK_SECRET here: the address is judged first, so each refusal below is for its address.
  before(async () => {
    t = await buildTestApp('sqlite')
    admin = await t.auth('root', ['admin'])
  })

  const create = async (url: string) => await t.request({ method: 'POST', url: '/exports', headers: admin, payload: { format: 'ndjson', callback_url: url } })

  for (const url of ['http://127.0.0.1:8080/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/x', 'http://localhost/x', 'https://192.168.0.10/x', 'http://[::ffff:127.0.0.1]/x', 'http://0.0.0.0/', 'http://[::127.0.0.1]/x', 'http://192.0.2.1/x', 'http://198.51.100.7/x', 'http://203.0.113.9/x', 'http://192.88.99.1/x', 'http://[64:ff9b::a9fe:a9fe]/x']) {
    it(`refuses ${url} with 422 unless WEBHOOK_ALLOW_LOOPBACK`, async () => {
      const res = await create(url)
      assert.equal(res.statusCode, 422)
      const p = json(res)
      assert.equal(p.errors[0].field, 'callback_url')
      assert.match(p.errors[0].message, /address/)
    })
  }

  it('is described in the OpenAPI document: the three operations with their answers, and the webhook', async () => {
    const doc = json(await t.request({ method: 'GET', url: '/openapi.json' }))
    assert.ok(doc.paths['/exports'].post.responses['202'])
    assert.ok(doc.paths['/exports/{export_id}'].get.responses['200'])
    const file = doc.paths['/exports/{export_id}/file'].get.responses
    for (const status of ['200', '206', '304', '404', '416']) assert.ok(file[status], status)
    assert.ok(file['206'].headers['content-range'])
    assert.ok(file['200'].content['application/x-ndjson'])
    const hook = doc.webhooks.exportFinished.post
    assert.deepEqual(hook.requestBody.content['application/json'].schema.oneOf.map((s: { $ref: string }) => s.$ref), ['#/components/schemas/ExportEventV1', '#/components/schemas/ExportEventV2'])
    assert.ok(doc.components.schemas.ExportEventV1)
    assert.ok(doc.paths['/v2/exports'].post.responses['202'])
  })

  it('refuses a public callback_url when no WEBHOOK_SECRET is set, since the webhook could not be signed', async () => {
    const res = await create('https://93.184.215.14/hooks')
    assert.equal(res.statusCode, 422)
    assert.match(json(res).errors[0].message, /WEBHOOK_SECRET/)
  })
})
