import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { catalogueOf } from '../../../src/context.ts'
import { problemSlug } from '../../../src/errors.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const PROBLEMS = catalogueOf().problems

const PROBLEM_MEMBERS = ['type', 'title', 'status', 'detail', 'instance', 'code', 'trace_id', 'request_id']
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** Asserts the API's one error body, and that its ids are those of the response headers. */
function assertProblem (res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/problem+json')
  const p = json<Record<string, unknown>>(res)
  const expected = 'errors' in p ? [...PROBLEM_MEMBERS, 'errors'] : PROBLEM_MEMBERS
  assert.deepEqual(Object.keys(p).sort(), [...expected].sort())
  assert.equal(p.status, status)
  assert.equal(p.code, code)
  assert.equal(p.type, `/problems/${problemSlug(code)}`)
  assert.equal(p.title, PROBLEMS[code as keyof typeof PROBLEMS].title)
  assert.equal(typeof p.detail, 'string')
  const trace = TRACEPARENT.exec(String(res.headers.traceparent))
  assert.ok(trace, `traceparent ${String(res.headers.traceparent)}`)
  assert.equal(p.trace_id, trace[1])
  assert.equal(p.request_id, res.headers['x-request-id'])
  return p
}

for (const kind of await storeKinds()) {
  describe(`system routes [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind) })

    describe('GET /', () => {
      it('links to every collection, the versions, the OpenAPI document and the docs', async () => {
        const res = await t.request({ method: 'GET', url: '/' })
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['api-version'], '1')
        const links = json(res)._links
        assert.equal(links.self.href, '/')
        assert.equal(links.posts.href, '/posts')
        assert.equal(links.versions.href, '/versions')
        assert.equal(links.openapi.href, '/openapi.json')
        assert.equal(links.docs.href, '/docs')
      })

      for (const version of [1, 2]) {
        it(`answers under /v${version} with links that keep the prefix`, async () => {
          const res = await t.request({ method: 'GET', url: `/v${version}` })
          assert.equal(res.statusCode, 200)
          assert.equal(res.headers['api-version'], String(version))
          const links = json(res)._links
          assert.equal(links.self.href, `/v${version}`)
          assert.equal(links.posts.href, `/v${version}/posts`)
          assert.equal(links.versions.href, `/v${version}/versions`)
          assert.equal(links.openapi.href, '/openapi.json')
          assert.equal(links.docs.href, '/docs')
        })
      }

      it('every link it gives leads somewhere', async () => {
        // An admin may follow every link (orders need a credential); nobody needs one to read the index.
        const admin = await t.auth('root', ['admin'])
        for (const url of ['/', '/v1', '/v2']) {
          for (const link of Object.values<{ href: string }>(json(await t.request({ method: 'GET', url }))._links)) {
            const res = await t.request({ method: 'GET', url: link.href, headers: admin })
            assert.equal(res.statusCode, 200, `${url} → ${link.href}`)
          }
        }
      })
    })

    describe('GET /versions', () => {
      it('lists versions 1 and 2 with their lifecycle dates', async () => {
        for (const url of ['/versions', '/v1/versions', '/v2/versions']) {
          const res = await t.request({ method: 'GET', url })
          assert.equal(res.statusCode, 200, url)
          const { versions } = json(res)
          assert.deepEqual(versions.map((v: { version: number }) => v.version), [1, 2])
          for (const v of versions) {
            assert.ok(!Number.isNaN(Date.parse(v.introduced)))
            assert.equal(v.deprecated, null)
            assert.equal(v.sunset, null)
          }
        }
      })
    })

    describe('health', () => {
      it('GET /healthz answers 200', async () => {
        const res = await t.request({ method: 'GET', url: '/healthz' })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(json(res), { status: 'ok' })
      })

      it('answers under every version prefix too, and ignores credentials', async () => {
        for (const url of ['/v1/healthz', '/v2/readyz', '/v2/openapi.json', '/v1/problems/not-found']) {
          assert.equal((await t.request({ method: 'GET', url })).statusCode, 200, url)
        }
        const wrongMethod = await t.request({ method: 'POST', url: '/v1/healthz' })
        assert.equal(wrongMethod.statusCode, 405)
        assert.equal(json(wrongMethod).instance, '/v1/healthz', 'the path the client asked for')
        const slash = await t.request({ method: 'GET', url: '/v1/docs/?x=1' })
        assert.equal(slash.statusCode, 308)
        assert.equal(slash.headers.location, '/v1/docs?x=1')
        const probed = await t.request({ method: 'GET', url: '/healthz', headers: { authorization: 'Bearer nonsense' } })
        assert.equal(probed.statusCode, 200, 'a liveness probe does not depend on credentials')
      })

      it('GET /readyz answers 200 while the store answers', async () => {
        const res = await t.request({ method: 'GET', url: '/readyz' })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(json(res), { status: 'ok' })
      })
    })

    describe('GET /problems/:slug', () => {
      for (const [code, p] of Object.entries(PROBLEMS)) {
        it(`describes ${code}`, async () => {
          const res = await t.request({ method: 'GET', url: `/problems/${problemSlug(code)}` })
          assert.equal(res.statusCode, 200)
          assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/)
          assert.ok(res.body.includes(`<code>${code}</code>`), 'names the code')
          assert.ok(res.body.includes(`<strong>${p.status}</strong>`), 'names the status')
        })
      }

      it('answers 404 NOT_FOUND for a problem type that does not exist', async () => {
        assertProblem(await t.request({ method: 'GET', url: '/problems/no-such-problem' }), 404, 'NOT_FOUND')
      })

      it('every problem the service sends has a page at its type', async () => {
        const p = json(await t.request({ method: 'GET', url: '/posts/987654' }))
        assert.equal((await t.request({ method: 'GET', url: p.type })).statusCode, 200)
      })
    })

    describe('routing', () => {
      it('answers 404 NOT_FOUND for an unknown path', async () => {
        const p = assertProblem(await t.request({ method: 'GET', url: '/no/such/thing?x=1' }), 404, 'NOT_FOUND')
        assert.equal(p.instance, '/no/such/thing')
      })

      it('answers 405 with Allow for a method the path does not support', async () => {
        const res = await t.request({ method: 'DELETE', url: '/posts' })
        assertProblem(res, 405, 'METHOD_NOT_ALLOWED')
        const allow = String(res.headers.allow).split(', ')
        for (const m of ['GET', 'HEAD', 'POST', 'OPTIONS']) assert.ok(allow.includes(m), `Allow has ${m}`)
        assert.ok(!allow.includes('DELETE'))
      })

      it('answers OPTIONS with 204 and Allow', async () => {
        for (const [url, methods] of [['/posts', ['GET', 'POST']], ['/posts/1', ['GET', 'PUT', 'DELETE']], ['/healthz', ['GET']]] as const) {
          const res = await t.request({ method: 'OPTIONS', url })
          assert.equal(res.statusCode, 204, url)
          assert.equal(res.body, '')
          const allow = String(res.headers.allow).split(', ')
          for (const m of [...methods, 'OPTIONS']) assert.ok(allow.includes(m), `${url} Allow has ${m}`)
        }
      })

      it('redirects /posts/ to /posts with 308, keeping the query, and creates nothing', async () => {
        const get = await t.request({ method: 'GET', url: '/posts/?status=published&limit=5' })
        assert.equal(get.statusCode, 308)
        assert.equal(get.headers.location, '/posts?status=published&limit=5')
        const before = json<unknown[]>(await t.request({ method: 'GET', url: '/posts?limit=100' })).length
        const post = await t.request({ method: 'POST', url: '/posts/', headers: await t.auth('alice'), payload: { title: 't', content: 'c' } })
        assert.equal(post.statusCode, 308, '308, so the client repeats the same method and body')
        assert.equal(post.headers.location, '/posts')
        assert.equal(json<unknown[]>(await t.request({ method: 'GET', url: '/posts?limit=100' })).length, before)
      })

      it('answers 406 when Accept names nothing it can produce', async () => {
        assertProblem(await t.request({ method: 'GET', url: '/posts', headers: { accept: 'text/html' } }), 406, 'NOT_ACCEPTABLE')
        assertProblem(await t.request({ method: 'GET', url: '/posts', headers: { accept: 'application/vnd.blog.v3+json' } }), 406, 'NOT_ACCEPTABLE')
      })

      it('answers 406 when the path and Accept name different versions', async () => {
        assertProblem(await t.request({ method: 'GET', url: '/v1/posts', headers: { accept: 'application/vnd.blog.v2+json' } }), 406, 'NOT_ACCEPTABLE')
        assertProblem(await t.request({ method: 'GET', url: '/v2/posts', headers: { accept: 'application/vnd.blog.v1+json' } }), 406, 'NOT_ACCEPTABLE')
      })

      it('answers 404 for a version in the path that does not exist', async () => {
        assertProblem(await t.request({ method: 'GET', url: '/v3/posts' }), 404, 'NOT_FOUND')
      })
    })

    describe('traceparent', () => {
      it('continues a valid incoming trace with a new span', async () => {
        const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
        const parent = '00f067aa0ba902b7'
        const res = await t.request({ method: 'GET', url: '/posts/987654', headers: { traceparent: `00-${traceId}-${parent}-01` } })
        const m = TRACEPARENT.exec(String(res.headers.traceparent))
        assert.ok(m)
        assert.equal(m[1], traceId)
        assert.notEqual(m[2], parent)
        assert.equal(m[3], '01')
        assertProblem(res, 404, 'POST_NOT_FOUND')
        assert.equal(json(res).trace_id, traceId)
      })

      it('starts a new trace when there is none, or it is invalid', async () => {
        const seen = new Set<string>()
        for (const traceparent of [undefined, 'garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01']) {
          const res = await t.request({ method: 'GET', url: '/healthz', headers: traceparent === undefined ? {} : { traceparent } })
          const m = TRACEPARENT.exec(String(res.headers.traceparent))
          assert.ok(m, String(traceparent))
          assert.doesNotMatch(m[1]!, /^0+$/)
          assert.ok(!String(traceparent).includes(m[1]!), 'not the invalid one')
          seen.add(m[1]!)
        }
        assert.equal(seen.size, 4, 'a new trace-id each time')
      })
    })

    describe('X-Request-Id', () => {
      it('echoes a safe id in the header and the error body', async () => {
        const res = await t.request({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'client-abc.123' } })
        assert.equal(res.headers['x-request-id'], 'client-abc.123')
        assert.equal(assertProblem(res, 404, 'NOT_FOUND').request_id, 'client-abc.123')
      })

      it('generates one when absent, too long or unsafe', async () => {
        const ids = new Set<string>()
        for (const sent of [undefined, 'x'.repeat(201), 'has space', 'new\u00e9line<script>']) {
          const res = await t.request({ method: 'GET', url: '/healthz', headers: sent === undefined ? {} : { 'x-request-id': sent } })
          const id = String(res.headers['x-request-id'])
          assert.notEqual(id, sent)
          assert.match(id, /^[0-9a-f-]{36}$/)
          ids.add(id)
        }
        assert.equal(ids.size, 4)
      })
    })

    describe('problem bodies', () => {
      it('have exactly the API\'s members, and errors[] only on 422', async () => {
        const alice = await t.auth('alice')
        const cases: [LightMyRequestResponse, number, string][] = [
          [await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload: '{' }), 400, 'MALFORMED_JSON'],
          [await t.request({ method: 'POST', url: '/posts', payload: { title: 't', content: '' } }), 401, 'UNAUTHENTICATED'],
          [await t.request({ method: 'GET', url: '/posts', headers: { authorization: 'Bearer nope' } }), 401, 'INVALID_TOKEN'],
          [await t.request({ method: 'POST', url: '/posts', headers: await t.auth('bob', []), payload: { title: 't', content: '' } }), 403, 'FORBIDDEN'],
          [await t.request({ method: 'GET', url: '/posts/987654' }), 404, 'POST_NOT_FOUND'],
          [await t.request({ method: 'DELETE', url: '/posts' }), 405, 'METHOD_NOT_ALLOWED'],
          [await t.request({ method: 'GET', url: '/posts', headers: { accept: 'image/png' } }), 406, 'NOT_ACCEPTABLE'],
          [await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'text/plain' }, payload: 'x' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
          [await t.request({ method: 'GET', url: '/posts?limit=101' }), 422, 'VALIDATION_FAILED'],
        ]
        for (const [res, status, code] of cases) {
          const p = assertProblem(res, status, code)
          assert.equal('errors' in p, status === 422, `${code}: errors[] only on 422`)
          assert.equal(res.headers['cache-control'], 'no-store', code)
        }
      })
    })
  })
}

describe('GET /readyz when the store is gone', () => {
  for (const kind of ['sqlite', 'postgres'] as const) {
    it(`answers 503 SERVICE_UNAVAILABLE with Retry-After, not 500 [${kind}]`, async (ctx) => {
      if (!(await storeKinds()).includes(kind)) return ctx.skip('PostgreSQL is not reachable')
      const t = await buildTestApp(kind)
      await t.store.close()
      const res = await t.request({ method: 'GET', url: '/readyz' })
      assertProblem(res, 503, 'SERVICE_UNAVAILABLE')
      assert.match(String(res.headers['retry-after']), /^\d+$/)
      assert.equal((await t.request({ method: 'GET', url: '/healthz' })).statusCode, 200, 'liveness does not depend on the store')
    })
  }
})

describe('over a real socket', () => {
  let t: TestApp
  let base: string
  before(async () => {
    t = await buildTestApp('sqlite')
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const address = t.app.server.address()
    assert.ok(address !== null && typeof address === 'object')
    base = `http://127.0.0.1:${address.port}`
  })

  it('creates a post with a JWT and reads it back', async () => {
    const created = await fetch(`${base}/posts`, {
      method: 'POST',
      headers: { ...await t.auth('alice'), 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Over the wire', content: 'Hello' }),
    })
    assert.equal(created.status, 201)
    const location = created.headers.get('location')
    assert.match(String(location), /^\/posts\/\d+$/)
    const post = await created.json() as { id: number, title: string, author: string }
    assert.equal(post.author, 'alice')

    const read = await fetch(`${base}${location}`)
    assert.equal(read.status, 200)
    assert.match(String(read.headers.get('content-type')), /^application\/json; charset=utf-8/)
    assert.deepEqual(await read.json(), post)
  })

  it('follows the 308 from /posts/ with the same method and body', async () => {
    const res = await fetch(`${base}/posts/`, {
      method: 'POST',
      headers: { ...await t.auth('alice'), 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Redirected', content: '' }),
    })
    assert.ok(res.redirected)
    assert.equal(res.status, 201)
    assert.equal((await res.json() as { title: string }).title, 'Redirected')
  })

  it('compresses a large body when asked, and says it varies', async () => {
    const res = await fetch(`${base}/openapi.json`, { headers: { 'accept-encoding': 'gzip' } })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-encoding'), 'gzip')
    assert.match(String(res.headers.get('vary')), /accept-encoding/i)
    assert.equal((await res.json() as { openapi: string }).openapi, '3.1.0')
  })
})
