import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { LightMyRequestResponse } from 'fastify'
import { catalogueOf } from '../../../src/context.ts'
import { RESOURCES } from '../../../src/registry.ts'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { validateResponse } from '../../openapi-validator.ts'
import { before } from '../../support/hooks.ts'

const PROBLEMS = catalogueOf().problems

interface MediaType { schema?: Record<string, unknown> }
interface Response { description?: string, content?: Record<string, MediaType>, headers?: Record<string, unknown> }
interface Parameter { name: string, in: string, schema?: { maximum?: number, minimum?: number } }
interface Operation { summary?: string, parameters?: Parameter[], requestBody?: unknown, responses?: Record<string, Response> }
interface Document {
  openapi: string
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, { properties?: Record<string, { enum?: string[], anyOf?: { enum?: string[], const?: string }[] }> }> }
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch']

/**
 * Every route the app serves, as `METHOD /path` with `{param}` placeholders, read from the
 * router's own tree (`printRoutes`), so a route added without documentation cannot hide.
 */
function servedRoutes (tree: string): Set<string> {
  const out = new Set<string>()
  const parents: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^([│├└─\s]*)(\S.*?) \(([A-Z, ]+)\)/.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    parents.length = depth - 1
    const path = parents.join('') + m[2]!
    parents[depth - 1] = m[2]!
    for (const method of m[3]!.split(', ')) out.add(`${method} ${path}`)
  }
  return out
}

/** How the document names a served path: /v1/… is documented once, as /…; `:id` becomes `{id}`. */
function documentedAs (path: string): string {
  const p = path.replace(/:([A-Za-z_]+)/g, '{$1}')
  if (p === '/v1') return '/'
  return p.startsWith('/v1/') ? p.slice(3) : p
}

describe('GET /openapi.json', () => {
  let t: TestApp
  let doc: Document
  let operations: { method: string, path: string, op: Operation }[]
  before(async () => {
    t = await buildTestApp('sqlite')
    const res = await t.request({ method: 'GET', url: '/openapi.json' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    doc = json<Document>(res)
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).filter(([m]) => METHODS.includes(m)).map(([method, op]) => ({ method, path, op })))
  })

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0')
    const result = await new Validator().validate(structuredClone(doc) as unknown as Record<string, unknown>)
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2))
  })

  it('is served whole: the same document the app builds', () => {
    assert.deepEqual(doc, JSON.parse(JSON.stringify(t.app.swagger())))
  })

  it('documents every route the app serves (but the /docs assets)', () => {
    const served = servedRoutes(t.app.printRoutes({ commonPrefix: false }))
    const missing: string[] = []
    let checked = 0
    for (const route of served) {
      const [method = '', path = ''] = route.split(' ')
      if (method === 'HEAD' || method === 'OPTIONS' || path === '/docs' || path.startsWith('/docs/')) continue
      checked++
      if (!doc.paths[documentedAs(path)]?.[method.toLowerCase()]) missing.push(`${route} (as ${documentedAs(path)})`)
    }
    assert.deepEqual(missing, [])
    for (const route of ['GET /', 'GET /versions', 'GET /posts', 'POST /posts', 'GET /posts/{post_id}', 'PUT /posts/{post_id}', 'DELETE /posts/{post_id}',
      'GET /v2', 'GET /v2/posts', 'GET /v2/posts/{post_id}', 'GET /healthz', 'GET /readyz', 'GET /openapi.json']) {
      const [method = '', path = ''] = route.split(' ')
      assert.ok(doc.paths[path]?.[method.toLowerCase()], `${route} is documented`)
    }
    assert.ok(checked >= 20, `the route tree was read (${checked} routes)`)
    for (const route of ['GET /', 'GET /v1', 'PUT /v2/posts/:post_id', 'GET /problems/:slug', 'GET /readyz']) assert.ok(served.has(route), `${route} was read from the tree`)
  })

  it('documents only routes the app serves', () => {
    const served = new Set([...servedRoutes(t.app.printRoutes({ commonPrefix: false }))].map(r => {
      const [method = '', path = ''] = r.split(' ')
      return `${method.toLowerCase()} ${documentedAs(path)}`
    }))
    for (const { method, path } of operations) assert.ok(served.has(`${method} ${path}`), `${method} ${path} is served`)
  })

  it('gives every response a described body, or none for 204, 301, 304 and 308', () => {
    for (const { method, path, op } of operations) {
      const responses = Object.entries(op.responses ?? {})
      assert.ok(responses.some(([s]) => /^2/.test(s)), `${method} ${path} documents a success`)
      for (const [status, r] of responses) {
        const where = `${method.toUpperCase()} ${path} ${status}`
        assert.ok(r.description, `${where} has a description`)
        if (status === '204' || status === '301' || status === '304' || status === '308') {
          assert.equal(r.content, undefined, `${where} has no body`)
          continue
        }
        const media = Object.entries(r.content ?? {})
        assert.ok(media.length > 0, `${where} documents its body`)
        for (const [type, m] of media) assert.ok(m.schema, `${where} ${type} has a schema`)
      }
    }
  })

  it('documents every error as application/problem+json with the Problem schema', () => {
    for (const { method, path, op } of operations) {
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        if (Number(status) < 400) continue
        assert.deepEqual(r.content, { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } }, `${method.toUpperCase()} ${path} ${status}`)
      }
    }
  })

  it('lists each status an operation can give', () => {
    // Every registered resource's collection, so a new resource is held to the same rules.
    const collections = RESOURCES.map(r => r.path.slice(1))
    for (const { method, path, op } of operations) {
      const has = new Set(Object.keys(op.responses ?? {}))
      const need = ['400', '401', '429', '500', '503'] // bad URL or credential, rate limit, failure, overload: anywhere
      const versioned = path === '/' || path === '/v2' || new RegExp(`^/(v2/)?(${[...collections, 'versions'].join('|')})(/|$)`).test(path)
      if (versioned) need.push('406')
      if (path.includes('{')) need.push('404', '422')
      if ((op.parameters ?? []).some(p => p.in === 'query')) need.push('422')
      if (['post', 'put', 'patch'].includes(method)) need.push('403', '413', '422')
      // A body of the wrong type: only where the operation takes a body (others ignore it).
      if (op.requestBody !== undefined) need.push('415')
      if (['put', 'patch', 'delete'].includes(method)) need.push('403', '412')
      // A stream (text/event-stream) has no representation to validate: no 304.
      const stream = (op.responses?.['200'] as { content?: Record<string, unknown> } | undefined)?.content?.['text/event-stream'] !== undefined
      if (method === 'get' && !stream && new RegExp(`^/(v2/)?(${collections.join('|')})`).test(path)) need.push('304')
      const lacking = need.filter(s => !has.has(s))
      assert.deepEqual(lacking, [], `${method.toUpperCase()} ${path} lacks ${lacking.join(', ')}`)
    }
  })

  it('publishes the error catalogue: the Problem code enum is every code of src/errors.ts', () => {
    const code = doc.components.schemas.Problem?.properties?.code
    assert.ok(code)
    const values = code.enum ?? code.anyOf?.flatMap(a => a.enum ?? (a.const === undefined ? [] : [a.const])) ?? []
    assert.deepEqual([...values].sort(), Object.keys(PROBLEMS).sort())
  })

  it('names the headers that carry meaning: validators, paging, Location, Prefer, replays, preconditions', () => {
    const headersOf = (path: string, method: string, status: string) => Object.keys(doc.paths[path]?.[method]?.responses?.[status]?.headers ?? {})
    const requestHeadersOf = (path: string, method: string) => (doc.paths[path]?.[method]?.parameters ?? []).filter(p => p.in === 'header').map(p => p.name.toLowerCase())
    for (const name of ['ETag', 'Cache-Control', 'Link', 'X-Total-Count']) assert.ok(headersOf('/posts', 'get', '200').includes(name), `list 200 ${name}`)
    assert.ok(!headersOf('/posts', 'get', '200').includes('Last-Modified'), 'a page has no Last-Modified')
    for (const name of ['ETag', 'Last-Modified', 'Cache-Control']) assert.ok(headersOf('/orders/{order_id}', 'get', '200').includes(name), `read 200 ${name}`)
    for (const name of ['Location', 'ETag', 'Preference-Applied', 'Idempotent-Replayed']) assert.ok(headersOf('/posts', 'post', '201').includes(name), `create 201 ${name}`)
    assert.ok(!headersOf('/posts/{post_id}', 'put', '200').includes('Idempotent-Replayed'), 'only POSTs replay')
    assert.ok(headersOf('/exports', 'post', '202').includes('Location'))
    assert.deepEqual(headersOf('/posts/{post_id}', 'delete', '204').filter(h => ['ETag', 'Last-Modified'].includes(h)), [], 'a deletion describes nothing')
    for (const name of ['if-none-match', 'if-modified-since', 'prefer']) assert.ok(requestHeadersOf('/posts', 'get').includes(name), `list takes ${name}`)
    for (const name of ['if-match', 'if-unmodified-since', 'prefer']) assert.ok(requestHeadersOf('/posts/{post_id}', 'put').includes(name), `PUT takes ${name}`)
    assert.ok(requestHeadersOf('/orders/{order_id}/cancel', 'post').includes('prefer'))
    assert.ok(!requestHeadersOf('/orders/{order_id}/items', 'get').includes('prefer'), 'an unpaged array takes no count preference')
  })

  it('publishes the maximum page size of 100 on limit and per_page', () => {
    for (const path of ['/posts', '/v2/posts']) {
      const params = doc.paths[path]?.get?.parameters ?? []
      for (const name of ['limit', 'per_page']) {
        const p = params.find(x => x.name === name && x.in === 'query')
        assert.ok(p, `${path} documents ${name}`)
        assert.equal(p.schema?.maximum, 100, `${path} ${name} maximum`)
        assert.equal(p.schema?.minimum, 1, `${path} ${name} minimum`)
      }
    }
  })
})

describe('the response validator of the tests', () => {
  let t: TestApp
  let post: Record<string, unknown>
  let real: LightMyRequestResponse
  let problem: Record<string, unknown>
  before(async () => {
    t = await buildTestApp('sqlite')
    const created = await t.request({ method: 'POST', url: '/posts', headers: await t.auth('alice'), payload: { title: 'checked', content: '' } })
    post = json(created)
    real = await t.request({ method: 'GET', url: `/posts/${String(post.id)}` })
    problem = json(await t.request({ method: 'GET', url: '/posts/999999' }))
  })

  /** A response as inject would give it, with this status and body. */
  function forged (statusCode: number, body: unknown, contentType = 'application/json; charset=utf-8', version = '1'): LightMyRequestResponse {
    const text = JSON.stringify(body)
    const headers = { ...real.headers, 'content-type': contentType, 'api-version': version, 'content-length': String(Buffer.byteLength(text)) }
    delete headers['content-encoding']
    return { ...real, statusCode, headers, body: text, payload: text, rawPayload: Buffer.from(text) } as LightMyRequestResponse
  }
  const get = () => ({ method: 'GET' as const, url: `/posts/${String(post.id)}` })

  it('accepts the real response', () => {
    assert.equal(real.statusCode, 200)
    validateResponse(t.app, get(), real)
    validateResponse(t.app, get(), forged(200, post))
  })

  it('fails a body that does not match the documented schema', () => {
    const { title: _title, ...untitled } = post
    assert.throws(() => { validateResponse(t.app, get(), forged(200, untitled)) }, /does not match the documented schema/)
    assert.throws(() => { validateResponse(t.app, get(), forged(200, { ...post, id: 'one' })) }, /does not match/)
    assert.throws(() => { validateResponse(t.app, get(), forged(200, { ...post, extra: true })) }, /does not match/)
  })

  it('fails a problem body that is not a Problem', () => {
    validateResponse(t.app, get(), forged(404, problem, 'application/problem+json'))
    assert.throws(() => { validateResponse(t.app, get(), forged(404, { message: 'not found' }, 'application/problem+json')) }, /does not match/)
    assert.throws(() => { validateResponse(t.app, get(), forged(404, { ...problem, code: 'NO_SUCH_CODE' }, 'application/problem+json')) }, /does not match/)
  })

  it('fails a status the document does not list', () => {
    assert.throws(() => { validateResponse(t.app, get(), forged(418, {})) }, /does not list/)
  })

  it('checks version 2 bodies against the version 2 schema', () => {
    const v2 = { ...get(), headers: { accept: 'application/vnd.blog.v2+json' } }
    assert.throws(() => { validateResponse(t.app, v2, forged(200, post, 'application/vnd.blog.v2+json', '2')) }, /does not match/, 'a version 1 body is not a version 2 post')
  })
})
