import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildMetricsApp } from '../../../src/http/pipeline/metrics.ts'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { type Instance, processEnv, startInstance, stop } from '../../process-helper.ts'
import { before } from '../../support/hooks.ts'

const TOKEN = 'scrape-me-0123456789abcdef'

describe('metrics', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite') })

  it('are not served on the API, under any version prefix, nor documented there', async () => {
    for (const url of ['/metrics', '/v1/metrics', '/v2/metrics']) {
      const res = await t.request({ method: 'GET', url })
      assert.equal(res.statusCode, 404, url)
      assert.equal(json(res).code, 'NOT_FOUND', url)
    }
    const doc = json<{ paths: Record<string, unknown> }>(await t.request({ method: 'GET', url: '/openapi.json' }))
    assert.deepEqual(Object.keys(doc.paths).filter(p => p.includes('metrics')), [])
  })

  it('count requests and their duration by route pattern, in Prometheus text format', async () => {
    await t.request({ method: 'GET', url: '/posts/424242' })
    await t.request({ method: 'GET', url: '/healthz' })
    const body = await t.scrape()
    assert.match(body, /^# TYPE http_requests_total counter$/m)
    assert.match(body, /^# TYPE http_request_duration_seconds histogram$/m)
    assert.match(body, /^http_requests_total\{[^}]*route="\/posts\/:post_id"[^}]*status="404"[^}]*\} [1-9]/m)
    assert.match(body, /^http_request_duration_seconds_count\{[^}]*route="\/healthz"[^}]*\} [1-9]/m)
    assert.match(body, /^process_cpu_seconds_total /m, 'the process figures are there too')
    assert.doesNotMatch(body, /route="\/posts\/424242"/, 'the raw path never becomes a label')
  })

  describe('the metrics listener', () => {
    let open: FastifyInstance
    let guarded: FastifyInstance
    before(async () => {
      open = await buildMetricsApp(t.context.metrics, { token: null })
      guarded = await buildMetricsApp(t.context.metrics, { token: TOKEN })
    })
    after(async () => { await Promise.all([open.close(), guarded.close()]) })

    it('serves GET /metrics as text/plain 0.0.4, never cached', async () => {
      const res = await open.inject({ method: 'GET', url: '/metrics' })
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
      assert.equal(res.headers['cache-control'], 'no-store')
      assert.match(res.body, /^http_requests_total\{/m)
    })

    it('answers anything else 404 NOT_FOUND as a problem', async () => {
      for (const url of ['/', '/posts', '/metrics/x']) {
        const res = await open.inject({ method: 'GET', url })
        assert.equal(res.statusCode, 404, url)
        assert.equal(res.headers['content-type'], 'application/problem+json')
        assert.equal(json(res).code, 'NOT_FOUND')
      }
    })

    it('with METRICS_TOKEN, refuses a scrape without it: 401 UNAUTHENTICATED with WWW-Authenticate', async () => {
      const res = await guarded.inject({ method: 'GET', url: '/metrics' })
      assert.equal(res.statusCode, 401)
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="metrics"')
      assert.equal(json(res).code, 'UNAUTHENTICATED')
      assert.doesNotMatch(res.body, /http_requests_total/)
    })

    it('with METRICS_TOKEN, refuses another token, a token one character short, and Basic: 401 INVALID_TOKEN', async () => {
      for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer nonsense', `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}`, `Bearer ${TOKEN} extra`]) {
        const res = await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization } })
        assert.equal(res.statusCode, 401, authorization)
        assert.equal(res.headers['www-authenticate'], 'Bearer realm="metrics", error="invalid_token"')
        assert.equal(json(res).code, 'INVALID_TOKEN')
        assert.doesNotMatch(res.body, /http_requests_total/)
      }
    })

    it('with METRICS_TOKEN, serves the scrape that sends it as Prometheus does (Authorization: Bearer)', async () => {
      const res = await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
      assert.equal(res.statusCode, 200)
      assert.match(res.body, /^http_requests_total\{/m)
    })
  })
})

describe('a service process with METRICS_PORT and METRICS_TOKEN', () => {
  let dir: string
  let server: Instance
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-metrics-'))
    server = await startInstance('metrics', processEnv({ url: `sqlite:${path.join(dir, 'blog.db')}`, dataDir: dir }, { METRICS_TOKEN: TOKEN }))
  })
  after(async () => {
    await stop(server)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('serves metrics on the metrics port only, behind the token', async () => {
    assert.notEqual(server.metrics, server.base)
    assert.equal((await fetch(`${server.base}/posts/77`)).status, 404)
    assert.equal((await fetch(`${server.base}/metrics`)).status, 404, 'not on the API port')
    assert.equal((await fetch(`${server.metrics}/metrics`)).status, 401, 'not without the token')
    const res = await fetch(`${server.metrics}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    assert.equal(res.status, 200)
    assert.match(await res.text(), /^http_requests_total\{method="GET",route="\/posts\/:post_id",status="404"\} 1$/m)
    assert.equal((await fetch(`${server.metrics}/posts/77`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404, 'the API is not on the metrics port')
  })

  it('closes both listeners on SIGTERM and exits 0', async () => {
    assert.equal(await stop(server), 0, server.output.join(''))
    await assert.rejects(fetch(`${server.metrics}/metrics`), 'the metrics listener is closed')
    await assert.rejects(fetch(`${server.base}/healthz`), 'the API listener is closed')
  })
})
