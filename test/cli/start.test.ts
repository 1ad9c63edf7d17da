import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { createContext, loadConfig, openStore } from '../../src/context.ts'
import { type Instance, processEnv, ROOT, startInstance, stop, token } from '../process-helper.ts'

const START = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start

/**
 * `npm start` runs one bundled file (scripts/bundle.ts) with every package but a few left out of
 * it. The rest of the suite runs the TypeScript sources, so this runs the start script's own
 * command, as `npm start` would, and goes through what the bundle could break: the native SQLite
 * addon, the validators and serializers compiled at run time, the OpenAPI document and /docs's
 * assets (packages left outside the bundle), metrics, a signed write and a conditional read; then
 * it asks the bundle and the sources the same twenty questions and compares the answers.
 */
describe('npm start (the bundled build)', () => {
  let dir: string
  let server: Instance
  let settings: Record<string, string>

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-start-'))
    settings = processEnv({ url: `sqlite:${path.join(dir, 'blog.db')}`, dataDir: dir })
    server = await startInstance('npm start', settings, START)
  })

  after(async () => {
    assert.equal(await stop(server), 0, server.output.join(''))
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('runs the bundle that npm run build made', () => {
    assert.match(START, /\sdist\/blog\.js serve$/)
    assert.ok(fs.existsSync(path.join(ROOT, 'dist/blog.js')), 'dist/blog.js is missing: npm run build makes it')
  })

  it('runs a bundle written in ASCII, which V8 holds at one byte a character (scripts/bundle.ts)', () => {
    const source = fs.readFileSync(path.join(ROOT, 'dist/blog.js'), 'utf8')
    const beyond = /[\u0080-\uffff]/.exec(source)
    assert.equal(beyond, null, `a character beyond ASCII at ${beyond?.index ?? 0}`)
  })

  it('writes with a token and reads back with validators, a 304 and a 404 problem', async () => {
    const auth = `Bearer ${await token('starter', ['posts:write'])}`
    const created = await fetch(`${server.base}/posts`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Bundled', content: 'Served by dist/blog.js.' }),
    })
    assert.equal(created.status, 201, await created.clone().text())
    const post = await created.json() as { id: number, title: string }
    assert.equal(post.title, 'Bundled')

    const read = await fetch(`${server.base}/posts/${post.id}`)
    assert.equal(read.status, 200)
    const etag = read.headers.get('etag')
    assert.match(etag ?? '', /^"[^"]+"$/)
    assert.equal((await fetch(`${server.base}/posts/${post.id}`, { headers: { 'if-none-match': etag! } })).status, 304)

    const list = await fetch(`${server.base}/posts?limit=1`)
    assert.equal(list.status, 200)
    assert.deepEqual((await list.json() as { id: number }[]).map(p => p.id), [post.id])

    const missing = await fetch(`${server.base}/posts/999999`)
    assert.equal(missing.status, 404)
    assert.equal(missing.headers.get('content-type'), 'application/problem+json')
    assert.equal((await missing.json() as { code: string }).code, 'POST_NOT_FOUND')

    const invalid = await fetch(`${server.base}/posts`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{"title":""}' })
    assert.equal(invalid.status, 422)
  })

  it('serves the OpenAPI document, /docs and its assets, and metrics', async () => {
    const doc = await fetch(`${server.base}/openapi.json`)
    assert.equal(doc.status, 200)
    assert.match((await doc.json() as { openapi: string }).openapi, /^3\.1\./)

    const page = await fetch(`${server.base}/docs`, { redirect: 'follow' })
    assert.equal(page.status, 200)
    const html = await page.text()
    const assets = [...html.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map(m => new URL(m[1]!, `${server.base}/docs/`).href)
    assert.ok(assets.length >= 2, `no scripts or styles in /docs:\n${html.slice(0, 500)}`)
    for (const asset of assets) {
      const res = await fetch(asset)
      assert.equal(res.status, 200, asset)
      assert.ok((await res.arrayBuffer()).byteLength > 100, asset)
    }

    const metrics = await fetch(`${server.metrics}/metrics`)
    assert.equal(metrics.status, 200)
    assert.match(await metrics.text(), /^http_requests_total\{method="POST",route="\/posts",status="201"\} 1$/m)
    assert.equal((await fetch(`${server.base}/metrics`)).status, 404, 'not on the API port')
  })

  it('answers as the TypeScript sources do, request for request (same database, same settings)', async () => {
    // The rest of the suite runs the sources; this holds the bundle to the same answers. Ids and
    // dates that differ per answer are left out; everything else (status, the API's
    // headers, every byte of the body) must be equal.
    const config = loadConfig(settings)
    const store = await openStore(config)
    const app = await buildApp(await createContext(config, { store, logger: false }))
    try {
      const auth = `Bearer ${await token('differ', ['posts:write'])}`
      const host = new URL(server.base).host
      const created = await fetch(`${server.base}/posts`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Compared', content: 'The same answer from both builds.' }),
      })
      const { id } = await created.json() as { id: number }
      const etag = (await fetch(`${server.base}/posts/${id}`)).headers.get('etag')!
      const next = /<([^>]+)>; rel="next"/.exec((await fetch(`${server.base}/posts?limit=1`)).headers.get('link') ?? '')?.[1]
      assert.ok(next !== undefined, 'page 1 of one item has a next link')
      const requests: { method: string, url: string, headers?: Record<string, string>, body?: string }[] = [
        { method: 'GET', url: '/posts?limit=2' },
        { method: 'GET', url: new URL(next, server.base).pathname + new URL(next, server.base).search },
        { method: 'GET', url: `/posts/${id}` },
        { method: 'GET', url: `/v2/posts/${id}` },
        { method: 'GET', url: '/posts?limit=1&fields=id,title,status', headers: { accept: 'application/vnd.blog.v2+json' } },
        { method: 'GET', url: `/posts/${id}`, headers: { 'if-none-match': etag } },
        { method: 'HEAD', url: `/posts/${id}` },
        { method: 'OPTIONS', url: '/posts' },
        { method: 'GET', url: '/posts/999999', headers: { 'accept-language': 'de' } },
        { method: 'GET', url: '/posts?limit=101' },
        { method: 'GET', url: '/posts?colour=red' },
        { method: 'GET', url: '/posts?cursor=not-a-cursor' },
        { method: 'GET', url: '/posts/abc' },
        { method: 'GET', url: `/posts/${id}`, headers: { accept: 'text/html' } },
        { method: 'DELETE', url: `/posts/${id}` },
        { method: 'PATCH', url: `/posts/${id}`, headers: { authorization: auth, 'content-type': 'text/plain' }, body: 'x' },
        { method: 'PUT', url: `/posts/${id}`, headers: { authorization: auth, 'content-type': 'application/json', 'if-match': '"stale"' }, body: '{"title":"No","content":"Never written."}' },
        { method: 'POST', url: '/posts', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{"title":' },
        { method: 'GET', url: '/nowhere' },
        { method: 'GET', url: '/openapi.json' },
      ]
      const COMPARED = ['content-type', 'etag', 'last-modified', 'cache-control', 'vary', 'link', 'allow', 'accept-patch', 'content-language',
        'api-version', 'deprecation', 'sunset', 'location', 'retry-after', 'ratelimit-policy', 'content-security-policy', 'x-content-type-options']
      const volatile = (body: string) => body.replace(/"(trace_id|request_id)":"[^"]*"/g, '"$1":"…"')
      for (const r of requests) {
        const label = `${r.method} ${r.url} ${JSON.stringify(r.headers ?? {})}`
        // fetch asks for gzip unless told otherwise; inject asks for nothing.
        const headers = { 'accept-encoding': 'identity', ...r.headers }
        const bundled = await fetch(server.base + r.url, { method: r.method, headers, body: r.body })
        const sources = await app.inject({ method: r.method as 'GET', url: r.url, headers: { host, ...headers }, ...(r.body !== undefined ? { payload: r.body } : {}) })
        assert.equal(bundled.status, sources.statusCode, label)
        for (const name of COMPARED) {
          assert.equal(bundled.headers.get(name) ?? undefined, [sources.headers[name]].flat().join(', ') || undefined, `${label}: ${name}`)
        }
        assert.equal(volatile(await bundled.text()), volatile(sources.body), label)
      }
      // The stale PUT changed nothing in either.
      assert.equal((await fetch(`${server.base}/posts/${id}`)).headers.get('etag'), etag)
    } finally {
      await app.close()
      await store.close()
    }
  })
})
