import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { storeKinds } from '../helper.ts'
import { png } from '../resources/media/images.ts'
import { buildTestSite, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

for (const kind of await storeKinds()) {
  describe(`the site's pages (${kind})`, () => {
    let s: TestSite
    let first: any
    before(async () => {
      s = await buildTestSite(kind)
      first = await publish(s.t, { title: 'Hello world', tags: ['Node JS', 'News'], content: 'Hello <there> & welcome to the blog.' })
      for (let i = 2; i <= 12; i++) await publish(s.t, { title: `Post number ${i}`, tags: ['News'] })
      await publish(s.t, { title: 'A draft', status: 'draft' })
    })

    it('serves the home page with the newest posts, and older ones on /page/2', async () => {
      const res = await s.get('/')
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8')
      const html = await res.text()
      assert.match(html, /<html lang="en">/)
      assert.match(html, /Post number 12/)
      assert.doesNotMatch(html, /Hello world/)
      assert.doesNotMatch(html, /A draft/)
      assert.match(html, /<link rel="next" href="http:\/\/127\.0\.0\.1:\d+\/page\/2">/)
      const two = await (await s.get('/page/2')).text()
      assert.match(two, /Hello world/)
      assert.match(two, /<link rel="prev" href="http:\/\/127\.0\.0\.1:\d+\/">/)
      assert.equal((await s.get('/page/3')).status, 404)
      const one = await s.get('/page/1')
      assert.equal(one.status, 301)
      assert.equal(one.headers.get('location'), '/')
    })

    it('serves a post at /{slug}, escaped, with its tags and reading time', async () => {
      const res = await s.get(`/${first.slug as string}`)
      assert.equal(res.status, 200)
      const html = await res.text()
      assert.match(html, /<h1>Hello world<\/h1>/)
      assert.match(html, /href="\/tag\/node-js"/)
      assert.match(html, /1 min read/)
      assert.match(html, /<meta property="og:type" content="article">/)
      assert.match(html, /"@type":"BlogPosting"/)
      assert.doesNotMatch(html, /<there>/)
    })

    it('serves tag pages by the tag\'s slug, paged', async () => {
      const res = await s.get('/tag/node-js')
      assert.equal(res.status, 200)
      const html = await res.text()
      assert.match(html, /Hello world/)
      assert.doesNotMatch(html, /Post number/)
      assert.equal((await s.get('/tag/news/page/2')).status, 200)
      assert.equal((await s.get('/tag/news/page/3')).status, 404)
      assert.equal((await s.get('/tag/nothing')).status, 404)
    })

    it('finds posts with /search?q=', async () => {
      await s.t.searchIndexed()
      const html = await (await s.get('/search?q=welcome')).text()
      assert.match(html, /Hello world/)
      assert.doesNotMatch(html, /Post number/)
      assert.equal((await s.get('/search')).status, 200)
    })

    it('answers 301 for a trailing slash and for a permalink ending in a slug, 404 for a draft or anything else', async () => {
      const slash = await s.get(`/${first.slug as string}/`)
      assert.equal(slash.status, 301)
      assert.equal(slash.headers.get('location'), `/${first.slug as string}`)
      const elsewhere = await s.get('//elsewhere.example/')
      assert.equal(elsewhere.status, 301)
      assert.equal(elsewhere.headers.get('location'), '/elsewhere.example', 'never to another origin')
      const permalink = await s.get(`/2019/05/${first.slug as string}`)
      assert.equal(permalink.status, 301)
      assert.equal(permalink.headers.get('location'), `/${first.slug as string}`)
      const missing = await s.get('/no-such-post')
      assert.equal(missing.status, 404)
      assert.equal(missing.headers.get('cache-control'), 'public, max-age=60')
      assert.match(missing.headers.get('content-type') ?? '', /text\/html/)
      assert.match(await missing.text(), /Page not found/)
      assert.equal((await s.get('/a-draft')).status, 404)
    })

    it('answers HEAD, a strong ETag and 304, with the caching and security headers', async () => {
      const res = await s.get('/')
      const etag = res.headers.get('etag')!
      assert.match(etag, /^"[^"]+"$/)
      assert.equal(res.headers.get('cache-control'), 'public, max-age=60, stale-while-revalidate=600')
      assert.equal(res.headers.get('content-security-policy'), "default-src 'self'; img-src 'self' data:; frame-ancestors 'self'")
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(res.headers.get('referrer-policy'), 'strict-origin-when-cross-origin')
      assert.equal(res.headers.get('set-cookie'), null)
      assert.equal((await s.get('/', { headers: { 'if-none-match': etag } })).status, 304)
      const head = await s.get('/', { method: 'HEAD' })
      assert.equal(head.status, 200)
      assert.equal(head.headers.get('etag'), etag)
      assert.equal(await head.text(), '')
    })

    it('serves robots.txt, the favicon and the theme\'s assets under hashed names', async () => {
      const robots = await (await s.get('/robots.txt')).text()
      assert.match(robots, /Allow: \//)
      assert.match(robots, /Sitemap: http:\/\/127\.0\.0\.1:\d+\/sitemap\.xml/)
      const icon = await s.get('/favicon.ico')
      assert.equal(icon.status, 200)
      assert.equal(icon.headers.get('content-type'), 'image/x-icon')
      const html = await (await s.get('/')).text()
      const css = /href="(\/assets\/style\.[0-9a-f]{12}\.css)"/.exec(html)?.[1]
      assert.ok(css, 'the stylesheet is linked under a hashed name')
      const sheet = await s.get(css)
      assert.equal(sheet.status, 200)
      assert.equal(sheet.headers.get('cache-control'), 'public, max-age=31536000, immutable')
      assert.equal((await s.get('/assets/nothing.css')).status, 404)
    })

    it('sends the settings\' icon as the favicon once there is one', async () => {
      const admin = await s.t.auth('ann', ['admin'])
      const m = JSON.parse((await s.t.request({ method: 'POST', url: '/media', headers: { ...admin, 'content-type': 'image/png' }, payload: await png(64, 64) })).body)
      const patched = await s.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { icon: m.id } })
      assert.equal(patched.statusCode, 200, patched.body)
      const icon = await s.get('/favicon.ico')
      assert.equal(icon.status, 302)
      assert.match(icon.headers.get('location') ?? '', new RegExp(`^/media/${m.id as string}/image`))
      await s.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { icon: null } })
    })

    it('shows a preview link as the post\'s page, marked, never cached; 308 once published; 404 unknown', async () => {
      const admin = await s.t.auth('ann', ['admin'])
      const draft = await publish(s.t, { title: 'Secret draft', status: 'draft' })
      const link = JSON.parse((await s.t.request({ method: 'POST', url: `/posts/${draft.id as number}/preview-links`, headers: admin, payload: {} })).body)
      const res = await s.get(`/p/${link.token as string}`)
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('cache-control'), 'private, no-store')
      assert.equal(res.headers.get('x-robots-tag'), 'noindex, nofollow')
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer')
      const html = await res.text()
      assert.match(html, /<h1>Secret draft<\/h1>/)
      assert.match(html, /This is a preview/)
      assert.match(html, /<meta name="robots" content="noindex, nofollow">/)
      const unknown = await s.get('/p/not-a-token')
      assert.equal(unknown.status, 404)
      assert.equal(unknown.headers.get('cache-control'), 'private, no-store')
      const put = await s.t.request({ method: 'PATCH', url: `/posts/${draft.id as number}`, headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { status: 'published' } })
      assert.equal(put.statusCode, 200, put.body)
      const moved = await s.get(`/p/${link.token as string}`)
      assert.equal(moved.status, 308)
      assert.equal(moved.headers.get('location'), `/${draft.slug as string}`)
    })

    it('serves the feeds and the sitemap', async () => {
      const atom = await s.get('/feed.atom')
      assert.equal(atom.status, 200)
      assert.match(atom.headers.get('content-type') ?? '', /application\/atom\+xml/)
      assert.match(await atom.text(), /Hello world/)
      const etag = atom.headers.get('etag')!
      assert.equal((await s.get('/feed.atom', { headers: { 'if-none-match': etag } })).status, 304)
      assert.equal((await s.get('/feed.json')).status, 200)
      assert.equal((await s.get('/feed.atom?tag=News')).status, 200)
      const map = await s.get('/sitemap.xml')
      assert.equal(map.status, 200)
      assert.match(await map.text(), /<urlset/)
    })

    it('does not serve the API, nor the API the site', async () => {
      assert.equal((await s.get('/posts')).status, 404)
      assert.equal((await s.t.request({ method: 'GET', url: '/tag/news' })).statusCode, 404)
    })
  })
}
