import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadAdminBuild } from '../../../src/routes/admin/admin-routes.ts'
import { buildTestApp, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

/** The editor is made by `npm run build` (scripts/bundle-admin.ts); `npm test` builds first. */
const built = loadAdminBuild()

describe('GET /admin', () => {
  let t: TestApp
  before(async () => {
    assert.ok(built !== null, 'dist/admin is missing: run npm run build')
    t = await buildTestApp('sqlite')
  })

  const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="(\/admin\/assets\/[^"]+)"/g)].map(m => m[1]!)

  it('serves the page, revalidated, with a strict Content-Security-Policy', async () => {
    const res = await t.request({ method: 'GET', url: '/admin' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['cache-control'], 'no-cache')
    assert.match(String(res.headers.etag), /^"[^"]+"$/)
    const csp = String(res.headers['content-security-policy'])
    const directives = new Map(csp.split(';').map(d => d.trim().split(/\s+/)).map(([k, ...v]) => [k!, v]))
    assert.deepEqual(directives.get('script-src'), ["'self'"])
    assert.deepEqual(directives.get('style-src'), ["'self'"])
    assert.deepEqual(directives.get('object-src'), ["'none'"])
    assert.deepEqual(directives.get('base-uri'), ["'none'"])
    assert.deepEqual(directives.get('default-src'), ["'none'"])
    assert.deepEqual(directives.get('connect-src'), ["'self'"])
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/)
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['x-frame-options'], 'DENY')
    // Nothing inline: no script or style element with content, no style attribute, no handler attribute.
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i)
    const assets = assetsOf(res.body)
    assert.equal(assets.length, 2, assets.join(', '))
    assert.ok(assets.every(a => /-[A-Z0-9]{8}\.(js|css)$/.test(a)), `content-hashed names: ${assets.join(', ')}`)
  })

  it('answers 304 to the page\'s ETag and 200 to another', async () => {
    const first = await t.request({ method: 'GET', url: '/admin' })
    const again = await t.request({ method: 'GET', url: '/admin', headers: { 'if-none-match': String(first.headers.etag) } })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
    assert.equal((await t.request({ method: 'GET', url: '/admin', headers: { 'if-none-match': '"other"' } })).statusCode, 200)
  })

  it('serves each asset the page names as immutable, with its type, ETag and 304', async () => {
    const page = await t.request({ method: 'GET', url: '/admin' })
    for (const url of assetsOf(page.body)) {
      const res = await t.request({ method: 'GET', url })
      assert.equal(res.statusCode, 200, url)
      assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable')
      assert.match(String(res.headers['content-type']), url.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
      assert.ok(res.rawPayload.length > 1000, `${url} has content`)
      const again = await t.request({ method: 'GET', url, headers: { 'if-none-match': String(res.headers.etag) } })
      assert.equal(again.statusCode, 304)
    }
  })

  it('answers 404 problem details for an asset it does not have, 422 for a name it never has', async () => {
    const missing = await t.request({ method: 'GET', url: '/admin/assets/editor-AAAAAAAA.js' })
    assert.equal(missing.statusCode, 404)
    assert.match(String(missing.headers['content-type']), /^application\/problem\+json/)
    assert.equal(missing.headers['cache-control'], 'no-store')
    const traversal = await t.request({ method: 'GET', url: '/admin/assets/..%2Fpackage.json' })
    assert.ok([404, 422].includes(traversal.statusCode), String(traversal.statusCode))
    assert.doesNotMatch(traversal.body, /"name":\s*"blog-post-service"/)
  })

  it('keeps the API\'s own policy on API answers', async () => {
    const res = await t.request({ method: 'GET', url: '/posts' })
    assert.equal(res.headers['content-security-policy'], "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
  })
})
