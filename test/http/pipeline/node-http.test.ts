import assert from 'node:assert/strict'
import net from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { parseRawResponse, type RawResponse, rawRequest } from '../../raw-http.ts'
import { recordResult } from '../../reliability-record.ts'
import { LINGER_MS } from '../../../src/http/pipeline/lingering-close.ts'
import { before } from '../../support/hooks.ts'

function assertRawProblem (res: RawResponse, status: number, code: string): Record<string, unknown> {
  assert.equal(res.status, status, JSON.stringify(res))
  assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/)
  const problem = JSON.parse(res.body) as Record<string, unknown>
  assert.equal(problem.code, code)
  assert.equal(problem.status, status)
  assert.equal(Buffer.byteLength(res.body), Number(res.headers['content-length']))
  return problem
}

/** How many exchanges with an unread body (npm run reliability sends more). */
const UNREAD_BODY_ROUNDS = Number(process.env.UNREAD_BODY_ROUNDS ?? 10)

/**
 * Sends `head` and then `body` at once, reads nothing for `readAfterMs` (a client busy elsewhere),
 * then reads until the server closes. With `endless`, keeps sending after the body until closed.
 */
async function unreadExchange (port: number, head: string, body: Buffer, readAfterMs: number, endless = false): Promise<{ text: string, error: string | null }> {
  return await new Promise(resolve => {
    // allowHalfOpen: a client that goes on sending after the server's FIN, as a hostile one may.
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: endless })
    const received: Buffer[] = []
    let error: string | null = null
    let more: NodeJS.Timeout | undefined
    socket.on('data', c => received.push(c))
    socket.on('error', e => { error = (e as NodeJS.ErrnoException).code ?? e.message })
    socket.on('close', () => {
      clearInterval(more)
      resolve({ text: Buffer.concat(received).toString('utf8'), error })
    })
    socket.once('connect', () => {
      socket.pause()
      socket.write(head)
      for (let i = 0; i < body.length; i += 16_384) socket.write(body.subarray(i, i + 16_384))
      if (endless) more = setInterval(() => { if (!socket.destroyed) socket.write(body) }, 20)
      setTimeout(() => socket.resume(), readAfterMs)
    })
  })
}

/** How many trickling uploads at once (npm run reliability sends more). */
const SLOW_CLIENTS = Number(process.env.SLOW_CLIENTS ?? 8)

async function listen (t: TestApp): Promise<number> {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  return (t.app.server.address() as net.AddressInfo).port
}

describe('answers that Node would give itself', () => {
  let t: TestApp
  let port: number
  before(async () => {
    t = await buildTestApp('sqlite')
    port = await listen(t)
  })

  it('answers an Expect it cannot meet with 417 EXPECTATION_FAILED as a problem', async () => {
    const res = await rawRequest(port, 'GET /posts HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n')
    const problem = assertRawProblem(res, 417, 'EXPECTATION_FAILED')
    assert.equal(problem.instance, '/posts')
    assert.equal(res.headers.connection, 'close')
  })

  it('still honours Expect: 100-continue', async () => {
    const body = JSON.stringify({ title: 'x', content: '' })
    const res = await rawRequest(port, `POST /posts HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n${body}`)
    // 100 Continue, then the answer: 401, because no credential was sent.
    assert.equal(res.status, 100)
  })

  it('answers an HTTP/1.1 request without Host with 400 BAD_REQUEST as a problem', async () => {
    const res = await rawRequest(port, 'GET /posts HTTP/1.1\r\nConnection: close\r\n\r\n')
    const problem = assertRawProblem(res, 400, 'BAD_REQUEST')
    assert.match(String(problem.detail), /Host/)
    // HTTP/1.0 has no Host requirement.
    assert.equal((await rawRequest(port, 'GET /healthz HTTP/1.0\r\n\r\n')).status, 200)
  })

  it('answers CONNECT on a known path with 405 and Allow, on an unknown one with 404, then closes', async () => {
    // A tunnel to elsewhere (authority form) is a CONNECT to this service's root: 405 as well.
    const res = await rawRequest(port, 'CONNECT /posts HTTP/1.1\r\nHost: x\r\n\r\n')
    assertRawProblem(res, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS, POST')
    assert.equal(res.headers.connection, 'close')
    assertRawProblem(await rawRequest(port, 'CONNECT /nowhere HTTP/1.1\r\nHost: x\r\n\r\n'), 404, 'NOT_FOUND')
    assertRawProblem(await rawRequest(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), 405, 'METHOD_NOT_ALLOWED')
  })

  it('answers a body of another type on a route that takes none with a 415 problem, even with a malformed Content-Type (found by fuzzing); a JSON body there is ignored', async () => {
    const auth = await t.auth('alice')
    for (const type of ['', 'a;;;', 'garbage', 'text/plain']) {
      const res = await t.request({ method: 'DELETE', url: '/posts/12345', headers: { ...auth, 'content-type': type }, payload: '{"a":1}' })
      assert.equal(res.statusCode, 415, `Content-Type ${JSON.stringify(type)}: ${res.body}`)
      assert.equal(json(res).code, 'UNSUPPORTED_MEDIA_TYPE')
    }
    for (const method of ['DELETE', 'GET'] as const) {
      const res = await t.request({ method, url: '/posts/12345', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"a":1}' })
      assert.equal(res.statusCode, 404, `${method} with a JSON body: ${res.body}`)
    }
  })

  it('answers every malformed request with a 400 problem before closing', async () => {
    const malformed = [
      'GET /posts HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'GET /posts HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'GET /posts HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n',
      'GET /po sts HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /posts HTTP/9.9\r\nHost: x\r\n\r\n',
      'POST /posts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      '\x00\x01\x02\r\n\r\n',
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    ]
    for (const request of malformed) {
      const res = await rawRequest(port, request)
      assert.ok(res.status === 400, `${JSON.stringify(request)} → ${res.status}`)
      assertRawProblem(res, 400, 'BAD_REQUEST')
    }
    recordResult('node-http', { test: 'Requests Node answers itself, over a raw socket', injected: 'Expect: bogus, no Host, CONNECT (3 forms), 8 malformed framings', count: 13, result: 'every one a problem+json body (417, 400, 405/404, 400) before the connection closes' })
  })

  it('delivers the whole answer before closing, though the route never read the body (no reset)', async () => {
    const body = Buffer.alloc(200_000, ' ')
    const head = `GET /openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
    const cut: string[] = []
    for (let i = 0; i < UNREAD_BODY_ROUNDS; i++) {
      const { text, error } = await unreadExchange(port, head, body, 50)
      const res = parseRawResponse(text)
      // Before: the server reset the connection, and the client lost the tail it had not read.
      if (res.status !== 200 || Buffer.byteLength(res.body) !== Number(res.headers['content-length'])) cut.push(`${res.status}: ${Buffer.byteLength(res.body)} of ${res.headers['content-length']} bytes (${error})`)
    }
    assert.deepEqual(cut, [])
    recordResult('unread-body', { test: 'Connection: close with a body the route does not read', injected: 'GET /openapi.json (~0.5 MB answer) with a 200 KB body, the client reading 50 ms later', count: UNREAD_BODY_ROUNDS, result: `${UNREAD_BODY_ROUNDS - cut.length} whole answers, 0 cut short by a reset (before: the tail lost in 13 of 20)` })
  })

  it('still closes, after LINGER_MS, a connection whose client never stops sending', async () => {
    const head = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
    const started = performance.now()
    const { text } = await unreadExchange(port, head, Buffer.from('400\r\n' + ' '.repeat(1024) + '\r\n'), 0, true)
    assert.equal(parseRawResponse(text).status, 200)
    // Closed by the linger bound, not by the client (it never stops) nor by Node's request timeout (30 s).
    assert.ok(performance.now() - started >= LINGER_MS, `closed after ${Math.round(performance.now() - started)} ms`)
  })
})

describe('slow clients', () => {
  let t: TestApp
  let port: number
  before(async () => {
    t = await buildTestApp('sqlite', { REQUEST_TIMEOUT_MS: '800', HEADERS_TIMEOUT_MS: '600' })
    port = await listen(t)
  })

  it('answers 408 CLIENT_TIMEOUT to every trickling upload, whatever the route or credential, and closes the connection', async () => {
    const auth = await t.auth('alice')
    const admin = await t.auth('root', ['admin'])
    const created = await t.request({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'slow', content: 'x' } })
    assert.equal(created.statusCode, 201)
    const id = json(created).id as string
    const kinds = [
      `POST /posts HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
      `PUT /posts/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\nIf-Match: *\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
      `PATCH /posts/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.authorization}\r\nContent-Type: application/merge-patch+json\r\nContent-Length: 100000\r\n\r\n`,
      `POST /exports HTTP/1.1\r\nHost: x\r\nAuthorization: ${admin.authorization}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
    ]
    // Before: 503 REQUEST_TIMEOUT or 408 at random on authenticated writes, as our deadline or Node's won the race.
    const heads = Array.from({ length: SLOW_CLIENTS }, (_, i) => kinds[i % kinds.length]!)
    // One byte every 50 ms, for far longer than the deadline, unless the server closes.
    const answers = await Promise.all(heads.map(async head => await rawRequest(port, [head, ...Array.from({ length: 200 }, () => ' ')], { gapMs: 50, timeoutMs: 8000 })))
    for (const res of answers) {
      assertRawProblem(res, 408, 'CLIENT_TIMEOUT')
      assert.equal(res.headers.connection, 'close')
      assert.equal(res.headers['retry-after'], undefined)
      assert.ok(res.closedAfterMs < 5000, `closed after ${Math.round(res.closedAfterMs)} ms`)
    }
    const slowest = Math.max(...answers.map(r => r.closedAfterMs))
    recordResult('slow-upload', { test: 'Trickling uploads (REQUEST_TIMEOUT_MS=800)', injected: 'a 100 000-byte body sent 1 byte per 50 ms to authenticated POST, PUT and PATCH of posts and an admin\'s POST /exports, at once', count: answers.length, result: `${answers.length} × 408 CLIENT_TIMEOUT with Connection: close and no Retry-After, 0 × 503; slowest closed after ${Math.round(slowest)} ms` })
  })

  it('closes with 408 CLIENT_TIMEOUT a client that does not finish its headers in HEADERS_TIMEOUT_MS', async () => {
    const res = await rawRequest(port, ['GET /posts HTTP/1.1\r\n', ...Array.from({ length: 100 }, (_, i) => `X-Slow-${i}: 1\r\n`)], { gapMs: 50, timeoutMs: 5000 })
    assertRawProblem(res, 408, 'CLIENT_TIMEOUT')
    assert.ok(res.closedAfterMs < 2500, `closed after ${Math.round(res.closedAfterMs)} ms`)
    recordResult('slow-headers', { test: 'Trickling headers (HEADERS_TIMEOUT_MS=600)', injected: 'one header line per 50 ms, never finished', count: 1, result: `408 CLIENT_TIMEOUT problem, connection closed after ${Math.round(res.closedAfterMs)} ms` })
  })

  it('keeps serving clients that send in time', async () => {
    const res = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert.equal(res.status, 200)
  })
})
