import assert from 'node:assert/strict'
import type net from 'node:net'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { POST_STATUSES, type Post } from '../../src/resources/posts/post.ts'
import type { Viewer } from '../../src/domain/principal.ts'
import { catalogueOf } from '../../src/context.ts'
import { buildTestApp, storeKinds, type TestApp } from '../helper.ts'
import { decodedBody } from '../openapi-validator.ts'
import { rawRequest } from '../raw-http.ts'
import { recordResult } from '../reliability-record.ts'
import { before } from '../support/hooks.ts'

const PROBLEMS = catalogueOf().problems

/**
 * Property-based fuzzing driven by the service's own OpenAPI document. `FUZZ_RUNS` sets the
 * number of requests per store (`npm run fuzz` runs a long form); `FUZZ_SEED` replays a run.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 120)
const RAW_RUNS = Number(process.env.FUZZ_RAW_RUNS ?? Math.max(20, Math.round(RUNS / 5)))
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)

type Schema = Record<string, any>
interface Operation { method: string, path: string, parameters: { in: string, name: string, schema: Schema }[], body: Record<string, Schema> }

/** What no answer may contain: stack frames, file paths, SQL, driver errors. */
const LEAKS = [/\n\s+at /, /node_modules/, /\/work\//, /\.ts:\d+/, /SQLITE_[A-Z]/, /syntax error at or near/i, /\bSELECT\b.*\bFROM\b/, /\binvalid byte sequence\b/, /\bkysely\b/i, /\bpg-pool\b/]

const HOSTILE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '__proto__', 'constructor', 'prototype', '../../etc/passwd', '%00', '%', '%zz', '%E0%A4%A',
  "' OR 1=1 --", '"; DROP TABLE posts; --', '\u202E', '\uFEFF', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '-1', '0', '1.5', '1e309', '9007199254740993', 'NaN', 'null',
  'true', '[]', '{}', '<script>alert(1)</script>', '$' + '{7*7}', '\\', '\r\n', 'x'.repeat(300), 'y'.repeat(9000),
]

function resolve (doc: Schema, schema: Schema | undefined): Schema {
  if (schema === undefined) return {}
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop()!
    return resolve(doc, doc.components?.schemas?.[name])
  }
  return schema
}

/** Values that follow the schema, most of the time; the rest of the arbitraries break it. */
function fromSchema (doc: Schema, raw: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(doc, raw)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  if (schema.const !== undefined) return fc.constant(schema.const)
  const union = schema.anyOf ?? schema.oneOf
  if (Array.isArray(union)) return fc.oneof(...union.map((s: Schema) => fromSchema(doc, s, depth)))
  switch (schema.type) {
    case 'integer': return fc.integer({ min: Math.max(schema.minimum ?? -1000, -1e9), max: Math.min(schema.maximum ?? 1000, 1e9) })
    case 'number': return fc.double({ noNaN: true, noDefaultInfinity: true })
    case 'boolean': return fc.boolean()
    case 'string': return fc.string({ unit: 'grapheme', minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) })
    case 'array': return depth > 3 ? fc.constant([]) : fc.array(fromSchema(doc, schema.items, depth + 1), { maxLength: 3 })
    case 'object': {
      if (depth > 3) return fc.constant({})
      const props: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, v] of Object.entries(schema.properties ?? {})) {
        // Read-only members are accepted and ignored; leave them out most of the time.
        if ((v as Schema).readOnly === true) continue
        props[k] = fromSchema(doc, v as Schema, depth + 1)
      }
      return fc.record(props, { requiredKeys: (schema.required ?? []).filter((k: string) => k in props) })
    }
    default: return fc.jsonValue({ maxDepth: 2 })
  }
}

const hostileString = fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 30 }))

/** A JSON value that breaks shapes: wrong types, deep nesting, prototype names, lone surrogates. */
const hostileJson: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map(v => JSON.stringify(v)),
  fc.record({ title: hostileString, content: hostileString }, { requiredKeys: [] }).map(v => JSON.stringify(v)),
  fc.constantFrom(
    '{"__proto__":{"admin":true},"title":"p","content":""}',
    '{"constructor":{"prototype":{"x":1}},"title":"c","content":""}',
    '{"title":"\\ud800","content":""}',
    '{"title":"a\\u0000","content":""}',
    '{"title":"dup","title":"dup2","content":""}',
    '[{"op":"replace","path":"/__proto__/x","value":1}]',
    '[{"op":"add","path":"/title","value":"\\u0000"}]',
    '[{"op":"move","from":"/title","path":"/title/x"}]',
    '{"title":1e999,"content":""}',
    '', ' ', 'null', '"str"', '{', '{"title":', '[]'
  ),
  fc.integer({ min: 10, max: 3000 }).map(n => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 10, max: 3000 }).map(n => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map(b => Buffer.from(b)),
  fc.constantFrom(Buffer.from([0x7b, 0x22, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]))
)

const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/merge-patch+json',
  'application/json-patch+json', 'application/vnd.blog.v1+json', 'application/vnd.blog.v2+json', 'application/vnd.blog.v9+json',
  'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '*/*', 'garbage', 'application/json;;;', '',
]
const ACCEPTS = ['application/json', 'application/vnd.blog.v1+json', 'application/vnd.blog.v2+json', 'application/vnd.blog.v7+json', '*/*', 'text/html', 'application/xml', 'application/json;q=0', '', ';;;']

function operationsOf (doc: Schema): Operation[] {
  const out: Operation[] = []
  for (const [path, item] of Object.entries(doc.paths as Record<string, Schema>)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']) {
      const op = item[method]
      if (op === undefined) continue
      const body: Record<string, Schema> = {}
      for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Record<string, Schema>)) body[type] = media.schema ?? {}
      out.push({ method: method.toUpperCase(), path, parameters: (op.parameters ?? []).map((p: Schema) => ({ in: p.in, name: p.name, schema: p.schema ?? {} })), body })
    }
  }
  return out
}

function encodeSegment (value: unknown): string {
  try {
    return encodeURIComponent(String(value))
  } catch {
    return '%ED%A0%80' // a lone surrogate cannot be percent-encoded as UTF-8; send its WTF-8 bytes
  }
}

interface FuzzRequest { method: string, url: string, headers: Record<string, string>, payload?: string | Buffer }

/** Checks one answer against the properties every answer must have. */
function checkAnswer (req: FuzzRequest, res: { statusCode: number, headers: Record<string, unknown>, body: string }): void {
  const what = `${req.method} ${req.url.slice(0, 200)} → ${res.statusCode}`
  assert.ok(res.statusCode < 500, `${what}: ${res.body.slice(0, 300)}`)
  for (const leak of LEAKS) assert.doesNotMatch(res.body, leak, `${what} leaks ${String(leak)}: ${res.body.slice(0, 300)}`)
  if (res.statusCode >= 400) {
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what)
    if (req.method === 'HEAD') return
    const problem = JSON.parse(res.body) as { code: keyof typeof PROBLEMS, status: number }
    assert.ok(problem.code in PROBLEMS, `${what}: uncatalogued code ${String(problem.code)}`)
    assert.equal(PROBLEMS[problem.code].status, res.statusCode, `${what}: ${problem.code} has status ${PROBLEMS[problem.code].status}`)
    assert.equal(problem.status, res.statusCode, what)
  }
}

/** The store's invariants, read straight from the store as an admin. */
async function checkStoreInvariants (t: TestApp): Promise<number> {
  const admin: Viewer = { subject: 'fuzz-admin', scopes: new Set(['admin']), kind: 'jwt' }
  const seen = new Set<number>()
  let after: (string | number)[] | undefined
  for (;;) {
    const page = await t.store.posts.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 100, ...(after ? { after } : {}) }, admin)
    for (const p of page.items as Post[]) {
      assert.ok(Number.isSafeInteger(p.id) && p.id >= 1 && !seen.has(p.id), `id ${p.id}`)
      seen.add(p.id)
      const title = [...p.title]
      assert.ok(title.length >= 1 && title.length <= 200 && p.title === p.title.trim() && p.title.trim() !== '', `title of ${p.id}: ${JSON.stringify(p.title)}`)
      assert.ok([...p.content].length <= 100_000, `content of ${p.id}`)
      assert.ok(!p.title.includes('\u0000') && !p.content.includes('\u0000') && !p.author.includes('\u0000'), `NUL in ${p.id}`)
      assert.ok(p.title.isWellFormed() && p.content.isWellFormed(), `ill-formed text in ${p.id}`)
      assert.ok((POST_STATUSES as readonly string[]).includes(p.status), `status of ${p.id}`)
      assert.ok(p.createdAt <= p.updatedAt, `timestamps of ${p.id}`)
      assert.ok(p.revision >= 1, `revision of ${p.id}`)
      const fetched = await t.store.posts.findById(p.id, admin)
      assert.deepEqual(fetched, p, `post ${p.id} reads back as listed`)
    }
    if (!page.more || page.items.length === 0) break
    after = [page.items.at(-1)!.id]
  }
  return seen.size
}

for (const kind of await storeKinds()) {
  describe(`fuzzing from the OpenAPI document [${kind}]`, () => {
    let t: TestApp
    let doc: Schema
    let ops: Operation[]
    const tokens: Record<string, string> = {}
    before(async () => {
      // Load shedding off: the fuzzer shares the server's event loop, so its own work would count
      // as the server's queue (test/http/pipeline/shedding.test.ts covers shedding).
      t = await buildTestApp(kind, { RATE_LIMIT_MAX: '0', REQUEST_TIMEOUT_MS: '3000', HEADERS_TIMEOUT_MS: '1000', OVERLOAD_MAX_WAIT_MS: '0' })
      doc = JSON.parse(JSON.stringify(t.app.swagger())) as Schema
      ops = operationsOf(doc)
      tokens.alice = `Bearer ${await t.token('alice', ['posts:write'])}`
      tokens.bob = `Bearer ${await t.token('bob', ['posts:write'])}`
      tokens.admin = `Bearer ${await t.token('root', ['admin'])}`
      tokens.reader = `Bearer ${await t.token('carol', [])}`
      tokens.expired = `Bearer ${await t.token('alice', ['posts:write'], { exp: 1 })}`
      for (let i = 0; i < 3; i++) {
        await t.request({ method: 'POST', url: '/posts', headers: { authorization: tokens.alice! }, payload: { title: `seed ${i}`, content: 'seed', status: i === 2 ? 'draft' : 'published' } })
      }
    })

    it(`answers ${RUNS} generated requests with no 5xx, only catalogued problems, documented bodies and no leaks`, async () => {
      const request: fc.Arbitrary<FuzzRequest> = fc.constantFrom(...ops).chain(op => {
        const pathParams = op.parameters.filter(p => p.in === 'path')
        const queryParams = op.parameters.filter(p => p.in === 'query')
        const value = (schema: Schema) => fc.oneof({ weight: 3, arbitrary: fromSchema(doc, schema) }, { weight: 1, arbitrary: hostileString })
        const bodyTypes = Object.keys(op.body)
        const body = bodyTypes.length === 0
          ? fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: hostileJson })
          : fc.oneof(
            { weight: 3, arbitrary: fc.constantFrom(...bodyTypes).chain(type => fromSchema(doc, op.body[type]).map(v => JSON.stringify(v))) },
            { weight: 2, arbitrary: hostileJson }
          )
        return fc.record({
          method: fc.oneof({ weight: 8, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS') }),
          path: fc.tuple(...pathParams.map(p => fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }) }, { weight: 1, arbitrary: value(p.schema) })))
            .map(values => pathParams.reduce((path, p, i) => path.replace(`{${p.name}}`, encodeSegment(values[i])), op.path)),
          query: fc.array(fc.oneof(
            ...(queryParams.length > 0 ? [fc.constantFrom(...queryParams).chain(p => value(p.schema).map(v => [p.name, v] as const))] : []),
            fc.tuple(fc.constantFrom('unknown', '__proto__', 'limit', 'sort', 'cursor', 'fields'), hostileString)
          ), { maxLength: 3 }),
          auth: fc.constantFrom(undefined, 'alice', 'bob', 'admin', 'reader', 'expired', 'garbage', 'basic'),
          contentType: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...(bodyTypes.length > 0 ? bodyTypes : ['application/json'])) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
          accept: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...ACCEPTS) }),
          extra: fc.array(fc.constantFrom<[string, string]>(
            ['if-match', '"nope"'], ['if-match', '*'], ['if-none-match', '*'], ['if-modified-since', 'yesterday'], ['prefer', 'return=minimal'],
            ['prefer', 'count=exact'], ['idempotency-key', 'k1'], ['idempotency-key', ' '], ['accept-language', 'de'], ['accept-language', '*;q=x'],
            ['x-request-id', 'fuzz'], ['x-request-id', 'a'.repeat(300)], ['traceparent', '00-xyz'], ['accept-encoding', 'br, gzip'], ['range', 'bytes=0-1']
          ), { maxLength: 3 }),
          body,
        }).map(r => {
          const search = r.query.map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(typeof v === 'object' ? JSON.stringify(v) : v)}`).join('&')
          const headers: Record<string, string> = Object.fromEntries(r.extra)
          if (r.auth === 'garbage') headers.authorization = 'Bearer not.a.token'
          else if (r.auth === 'basic') headers.authorization = 'Basic YTpi'
          else if (r.auth !== undefined) headers.authorization = tokens[r.auth]!
          if (r.accept !== undefined) headers.accept = r.accept
          if (r.body !== undefined) headers['content-type'] = r.contentType
          return { method: r.method, url: r.path + (search === '' ? '' : `?${search}`), headers, ...(r.body !== undefined ? { payload: r.body } : {}) }
        })
      })
      let answered = 0
      await fc.assert(fc.asyncProperty(request, async req => {
        const res: LightMyRequestResponse = await t.request(req as never)
        answered++
        checkAnswer(req, { statusCode: res.statusCode, headers: res.headers, body: decodedBody(res) })
      }), { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) })
      const posts = await checkStoreInvariants(t)
      recordResult(`fuzz-inject-${kind}`, { test: `Fuzzed requests from the OpenAPI document [${kind}]`, injected: 'valid and hostile paths, queries, headers, bodies (NUL, invalid UTF-8, __proto__, deep nesting, odd media types)', count: answered, result: `0 × 5xx, every error a catalogued problem, every 2xx body valid; store invariants hold over ${posts} posts` })
    })

    it(`answers ${RAW_RUNS} broken HTTP framings over a raw socket with a problem or a clean close`, async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (t.app.server.address() as net.AddressInfo).port
      const line = fc.tuple(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'CONNECT', 'TRACE', 'BREW', 'get', ''),
        fc.constantFrom('/posts', '/posts/1', '/', '*', 'http://x/posts', '/posts?limit=1', '/%00', '/posts/%', '//posts', '/posts/' + 'a'.repeat(300), ''),
        fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'HTTPS/1.1', '')
      ).map(([m, target, v]) => `${m} ${target} ${v}`)
      const header = fc.constantFrom(
        'Host: x', 'Host: x', 'Host:', 'Content-Type: application/json', 'Content-Length: 2', 'Content-Length: -1', 'Content-Length: 1, 2',
        'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked', 'Transfer-Encoding: xchunked', 'Expect: 100-continue', 'Expect: bogus',
        ' folded: header', 'No-Colon', 'Bad Name: 1', 'X-Nul: a\u0000b', 'Authorization: Bearer x', 'Connection: upgrade', 'Upgrade: websocket', 'Connection: close'
      )
      const framing = fc.record({
        line,
        headers: fc.array(header, { maxLength: 5 }),
        body: fc.constantFrom('', '{}', '0\r\n\r\n', '2\r\n{}\r\n0\r\n\r\n', 'zz\r\n', '{"title":"t","content":""}', '\u0000\u0001'),
        eol: fc.constantFrom('\r\n', '\r\n', '\n'),
      }).map(r => `${r.line}${r.eol}${r.headers.join(r.eol)}${r.headers.length > 0 ? r.eol : ''}${r.eol}${r.body}`)
      let cases = 0
      await fc.assert(fc.asyncProperty(framing, async raw => {
        // Everything ends within the read timeouts: an answer and a close, or a close.
        const res = await rawRequest(port, Buffer.from(raw, 'latin1'), { timeoutMs: 6000, untilAnswer: true })
        cases++
        if (Number.isNaN(res.status)) return // closed without an answer: only for bytes that are not HTTP at all
        // A client that stops half-way gets 408 CLIENT_TIMEOUT, its fault: never a 5xx (issue 27).
        checkAnswer({ method: raw.split(' ')[0] ?? '', url: raw.slice(0, 80), headers: {} }, { statusCode: res.status, headers: res.headers, body: res.body })
      }), { numRuns: RAW_RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) })
      assert.equal((await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status, 200, 'still serving')
      recordResult(`fuzz-raw-${kind}`, { test: `Broken HTTP framing over a raw socket [${kind}]`, injected: 'bad request lines, versions, headers, folding, NUL, conflicting lengths and chunking, bare LF', count: cases, result: '0 × 5xx (a stalled request is 408 CLIENT_TIMEOUT); every error a catalogued problem; never a hang' })
    })
  })
}
