import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { allPosts, fixture, type Headers, importFile, upstream, wxr, wxrPost } from './import-helper.ts'
import { before } from '../../support/hooks.ts'

const FAST = { IMPORT_POLL_MS: '20', RATE_LIMIT_MAX: '0' }
const XML = 'application/xml'
const JSON_TYPE = 'application/json'

/** A Ghost export (Settings → Export shape) of `posts`, by `ann`. */
function ghost (posts: object[], version = '5.2.0', data: object = {}): string {
  return JSON.stringify({
    db: [{
      meta: { exported_on: 1700000000000, version },
      data: {
        posts,
        tags: [{ id: 't1', name: 'Travel', slug: 'travel' }, { id: 't2', name: '#internal', slug: 'hash-internal' }],
        posts_tags: posts.map((p: any, i) => ({ id: `pt${i}`, post_id: p.id, tag_id: 't1', sort_order: 0 })),
        users: [{ id: 'u1', name: 'Ann', slug: 'ann', email: 'ann@example.com' }],
        posts_authors: posts.map((p: any, i) => ({ id: `pa${i}`, post_id: p.id, author_id: 'u1', sort_order: 0 })),
        settings: [{ key: 'title', value: 'A blog' }],
        ...data,
      },
    }],
  })
}

function ghostPost (id: string, title: string, extra: object = {}): object {
  return { id, title, slug: title.toLowerCase().replace(/\W+/g, '-'), html: `<p>${title} body.</p>`, status: 'published', type: 'post', published_at: '2022-02-03T04:05:06.000Z', custom_excerpt: null, ...extra }
}

for (const kind of await storeKinds()) {
  describe(`POST /imports: real exports [${kind}]`, () => {
    let t: TestApp
    let admin: Headers
    before(async () => {
      t = await buildTestApp(kind, FAST)
      admin = await t.auth('root', ['admin'])
    })

    it('imports the WordPress importer\'s valid-wxr-1.1.xml: its post mapped, its page, comment and author counted', async c => {
      const file = upstream('wp-valid-wxr-1.1.xml')
      if (file === null) return c.skip('fixture not in place')
      const job = await importFile(t, file, XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.source, 'wordpress')
      assert.equal(job.progress, 100)
      assert.deepEqual(job.report.posts, { created: 1, updated: 0, unchanged: 0, skipped: 1 })
      assert.deepEqual([job.report.not_imported.pages, job.report.not_imported.comments, job.report.not_imported.users], [1, 1, 1])
      const post = (await allPosts(t, admin)).find(p => p.title === 'Hello world!')
      assert.equal(post.slug, 'hello-world')
      assert.equal(post.status, 'published')
      assert.equal(post.author, 'john')
      assert.equal(post.published_at, '2010-10-16T20:53:18.000Z')
      // Categories and tags; a custom taxonomy (post_tax) is not a tag.
      assert.deepEqual(post.tags, ['alpha', 'Clippable'])
      assert.equal(post.content, 'Welcome to WordPress. This is your first post. Edit or delete it, then start blogging!')
    })

    it('imports the WordPress importer\'s small-export.xml: six posts (one the same source post as above, a private one as a draft), five pages skipped, tags past 20 left out with a warning', async c => {
      const file = upstream('wp-small-export.xml')
      if (file === null) return c.skip('fixture not in place')
      const before = (await allPosts(t, admin)).length
      const job = await importFile(t, file, XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      // Its "Hello world!" has the wp:post_id and guid of valid-wxr-1.1.xml's (both from a site at
      // http://localhost/): the same source post, imported above, now updated (another author, category).
      assert.deepEqual(job.report.posts, { created: 5, updated: 1, unchanged: 0, skipped: 5 })
      assert.equal(job.report.not_imported.pages, 5)
      const posts = (await allPosts(t, admin)).slice(before)
      assert.equal(posts.length, 5)
      const byTitle = new Map(posts.map(p => [p.title, p]))
      assert.equal(byTitle.get('Private Post').status, 'draft')
      assert.deepEqual(byTitle.get('Private Post').tags, ['Tag1', 'Tag2', 'Tag3', 'Uncategorized'])
      assert.equal(byTitle.get('Many Categories').tags.length, 20)
      assert.ok(job.report.warnings.some((w: any) => w.item.includes('Many Categories') && /first 20/.test(w.message)))
    })

    it('imports the WordPress importer\'s wxr-simple.xml (WXR 1.2, block editor markup): links kept as Markdown', async c => {
      const file = upstream('wp-wxr-simple.xml')
      if (file === null) return c.skip('fixture not in place')
      const job = await importFile(t, file, XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.posts, { created: 1, updated: 0, unchanged: 0, skipped: 0 })
      const post = (await allPosts(t, admin)).find(p => p.title === '"The Road Not Taken" by Robert Frost')
      assert.ok(post.slug.startsWith('hello-world'))
      assert.match(post.content, /\[One\]\(https:\/\/playground\.internal\/path\/one\)/)
      assert.doesNotMatch(post.content, /wp:paragraph/)
      assert.equal(post.published_at, '2024-06-05T16:04:48.000Z')
    })

    it('imports Ghost\'s export fixture ghost.json (TryGhost/migrate): posts with their tags and authors; users and settings counted', async c => {
      const file = upstream('ghost.json')
      if (file === null) return c.skip('fixture not in place')
      const job = await importFile(t, file, JSON_TYPE, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.source, 'ghost')
      assert.deepEqual(job.report.posts, { created: 3, updated: 0, unchanged: 0, skipped: 0 })
      assert.equal(job.report.not_imported.users, 2)
      assert.equal(job.report.not_imported.settings, 5)
      const posts = await allPosts(t, admin)
      const one = posts.find(p => p.title === 'Post 1')
      assert.equal(one.slug, 'post-1')
      assert.equal(one.author, 'alice-johnson')
      assert.deepEqual(one.tags, ['News'])
      assert.equal(one.published_at, '2025-01-01T00:00:00.000Z')
      assert.match(one.content, /Hello world/)
      assert.match(one.content, /!\[\]\(https:\/\/example\.com\/images\/photo-1\.jpg\)/)
      assert.equal(posts.find(p => p.title === 'Post 2').author, 'bob-smith')
      // Each source author is a user here now: a profile without sign-in, listed as the post's author.
      assert.deepEqual(one.authors, ['alice-johnson'])
      const users = json(await t.request({ method: 'GET', url: '/users?status=inactive', headers: admin }))
      assert.deepEqual(users.map((u: { slug: string }) => u.slug).filter((s: string) => s === 'alice-johnson' || s === 'bob-smith').sort(), ['alice-johnson', 'bob-smith'])
      assert.equal((await t.request({ method: 'GET', url: '/authors/alice-johnson' })).statusCode, 200)
      // Its third post is in Lexical alone (no html): read from the editor's document.
      assert.equal(posts.find(p => p.title === 'Post 3 - Lexical').content, '![](https://example.com/images/lexical-image.jpg)')
    })

    it('imports Ghost\'s flat export shape (ghost-flat.json, TryGhost/migrate)', async c => {
      const file = upstream('ghost-flat.json')
      if (file === null) return c.skip('fixture not in place')
      const job = await importFile(t, file, JSON_TYPE, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.report.posts.created, 1)
      const post = (await allPosts(t, admin)).find(p => p.title === 'Flat Format Post')
      assert.equal(post.slug, 'flat-format-post')
      assert.equal(post.author, 'root', 'no author in the file: the admin who imported it')
    })
  })

  describe(`POST /imports: mapping, edge cases, re-imports [${kind}]`, () => {
    let t: TestApp
    let admin: Headers
    let edge: any
    before(async () => {
      t = await buildTestApp(kind, FAST)
      admin = await t.auth('root', ['admin'])
      edge = await importFile(t, fixture('edge-cases.xml'), 'application/rss+xml', admin)
    })

    it('answers 202 with the job, Location and no-store; the job\'s end holds the counts', async () => {
      assert.equal(edge.status, 'succeeded', edge.failure)
      assert.deepEqual(edge.report.posts, { created: 9, updated: 0, unchanged: 0, skipped: 4 })
      assert.deepEqual(edge.report.not_imported, { pages: 1, attachments: 1, menu_items: 1, comments: 1, users: 1, settings: 0, other: 0 })
      assert.equal(edge.report.redirects, 2)
      assert.equal(edge.report.tags, 20)
      assert.deepEqual(edge.report.media, { imported: 0, failed: 0 })
      const read = await t.request({ method: 'GET', url: `/imports/${edge.id}`, headers: admin })
      assert.equal(read.headers['cache-control'], 'private, no-store')
      const again = await t.request({ method: 'GET', url: `/imports/${edge.id}`, headers: { ...admin, 'if-none-match': String(read.headers.etag) } })
      assert.equal(again.statusCode, 304)
      const v2 = json(await t.request({ method: 'GET', url: `/v2/imports/${edge.id}`, headers: admin }))
      assert.equal(v2.importId, edge.id)
    })

    it('mends what breaks a limit, with a warning each: no title, a 300-character slug, 50 tags, years 0 and 10000', async () => {
      const posts = new Map((await allPosts(t, admin)).map(p => [p.title, p]))
      const warned = (item: RegExp, message: RegExp) => assert.ok(edge.report.warnings.some((w: any) => item.test(w.item) && message.test(w.message)), `no warning ${message} for ${item}`)
      assert.equal(posts.get('Untitled').slug, 'untitled-one')
      warned(/^post 101$/, /no title/)
      const long = posts.get('A very long slug').slug
      assert.equal(long.length, 99)
      assert.match(long, /^long(-long)+$/)
      warned(/post 102/, /slug is longer than 100/)
      assert.deepEqual(posts.get('Fifty tags').tags, Array.from({ length: 20 }, (_, i) => `Tag ${i}`))
      warned(/post 103/, /50 tags/)
      for (const [title, id] of [['Year zero', 104], ['Year ten thousand', 105]] as const) {
        const p = posts.get(title)
        assert.equal(p.status, 'published')
        assert.ok(Date.parse(p.published_at) >= Date.parse(edge.created_at), `${title}: the import's time`)
        warned(new RegExp(`post ${id}`), /not one this service can hold/)
      }
      warned(/post 112/, /trash/)
    })

    it('drops scripts, iframes, objects and javascript: links; keeps the words and safe links', async () => {
      const p = (await allPosts(t, admin)).find(x => x.title === 'Hostile HTML')
      assert.equal(p.content, 'Safe words.\n\nclick me and [a good link](https://good.example/)')
      for (const bad of ['<script', 'alert', '<iframe', 'evil.example', 'javascript:', 'x.swf']) {
        assert.ok(!p.content.includes(bad) && !p.content_html.includes(bad), bad)
      }
    })

    it('maps status, schedule, dates, author, paragraphs; the old permalink and _wp_old_slug answer 301', async () => {
      const posts = new Map((await allPosts(t, admin)).map(p => [p.title, p]))
      const future = posts.get('In the future')
      assert.equal(future.status, 'scheduled')
      assert.equal(future.publish_at, '2099-01-02T03:04:05.000Z')
      assert.equal(future.published_at, null)
      const renamed = posts.get('Renamed post')
      assert.equal(renamed.published_at, '2020-03-04T05:06:07.000Z')
      assert.equal(renamed.author, 'editor')
      for (const old of ['original-name', 'older-name']) {
        const res = await t.request({ method: 'GET', url: `/posts/by-slug/${old}` })
        assert.equal(res.statusCode, 301, old)
        assert.equal(res.headers.location, '/posts/by-slug/renamed-post')
      }
      assert.equal(posts.get('With a comment').content_html, '<p>First paragraph.</p>\n<p>Second paragraph<br>\nwith a line break.</p>\n')
    })

    it('importing the same file again creates nothing: every post unchanged, no revision added', async () => {
      const job = await importFile(t, fixture('edge-cases.xml'), XML, admin)
      assert.deepEqual(job.report.posts, { created: 0, updated: 0, unchanged: 9, skipped: 4 })
      assert.equal(job.report.redirects, 0)
      const posts = await allPosts(t, admin)
      assert.equal(posts.length, 9)
      const revisions = json(await t.request({ method: 'GET', url: `/posts/${posts[0].id}/revisions`, headers: admin }))
      assert.equal(revisions.length, 1)
    })

    it('an edited file updates what changed, each with a revision; the rest is unchanged; a slug taken here gets -2', async () => {
      const first = wxr([wxrPost(1, 'One'), wxrPost(2, 'Two')])
      const a = await importFile(t, first, XML, admin)
      assert.deepEqual(a.report.posts, { created: 2, updated: 0, unchanged: 0, skipped: 0 })
      const edited = wxr([wxrPost(1, 'One'), wxrPost(2, 'Two, edited', '<p>New words.</p>'), wxrPost(3, 'Three', undefined, '<wp:post_name>p-1</wp:post_name>')])
      const b = await importFile(t, edited, XML, admin)
      assert.deepEqual(b.report.posts, { created: 1, updated: 1, unchanged: 1, skipped: 0 })
      const posts = (await allPosts(t, admin)).filter(p => p.author === 'writer')
      const two = posts.find(p => p.title === 'Two, edited')
      assert.equal(two.content, 'New words.')
      assert.equal(two.slug, 'p-2')
      const revisions = json(await t.request({ method: 'GET', url: `/posts/${two.id}/revisions`, headers: admin }))
      assert.deepEqual(revisions.map((r: any) => [r.number, r.title, r.editor]), [[2, 'Two, edited', 'root'], [1, 'Two', 'writer']])
      // Two wp:post_name p-1 (the first post's, and the third's own): the second to come gets -2.
      assert.ok(posts.some(p => p.title === 'Three' && p.slug === 'p-1-2'))
    })

    it('creates again a post deleted here, and finds the new one on the next import', async () => {
      const file = wxr([wxrPost(70, 'Seventy'), wxrPost(71, 'Seventy-one')])
      await importFile(t, file, XML, admin)
      const seventy = (await allPosts(t, admin)).find(p => p.title === 'Seventy')
      assert.equal((await t.request({ method: 'DELETE', url: `/posts/${seventy.id}`, headers: admin })).statusCode, 204)
      const again = await importFile(t, file, XML, admin)
      assert.deepEqual(again.report.posts, { created: 1, updated: 0, unchanged: 1, skipped: 0 })
      const third = await importFile(t, file, XML, admin)
      assert.deepEqual(third.report.posts, { created: 0, updated: 0, unchanged: 2, skipped: 0 })
      assert.equal((await allPosts(t, admin)).filter(p => p.title === 'Seventy').length, 1)
    })

    it('?dry_run=true reports what the import would do and writes nothing', async () => {
      const before = await allPosts(t, admin)
      const file = wxr([wxrPost(50, 'Fifty'), wxrPost(51, 'Fifty-one'), wxrPost(2, 'Two, edited again')])
      const job = await importFile(t, file, XML, admin, '?dry_run=true')
      assert.equal(job.dry_run, true)
      assert.deepEqual(job.report.posts, { created: 2, updated: 1, unchanged: 0, skipped: 0 })
      assert.deepEqual(await allPosts(t, admin), before)
      await t.searchIndexed() // a post written would be in the index by now
      const found = await t.request({ method: 'GET', url: '/posts?q=Fifty-one', headers: admin })
      assert.deepEqual(json(found), [])
    })

    it('honours Idempotency-Key, bound to the file\'s bytes: the same file replays the job, another is 422', async () => {
      const file = wxr([wxrPost(80, 'Eighty')])
      const headers = { ...admin, 'content-type': XML, 'idempotency-key': 'import-80' }
      const first = await t.request({ method: 'POST', url: '/imports', headers, payload: file })
      assert.equal(first.statusCode, 202)
      const replay = await t.request({ method: 'POST', url: '/imports', headers, payload: file })
      assert.equal(replay.statusCode, 202)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.equal(replay.body, first.body)
      const other = await t.request({ method: 'POST', url: '/imports', headers, payload: wxr([wxrPost(81, 'Eighty-one')]) })
      assert.equal(other.statusCode, 422)
      assert.equal(json(other).code, 'IDEMPOTENCY_KEY_REUSED')
    })

    it('refuses a caller without admin (403) and hides another admin\'s import (404)', async () => {
      const writer = await t.auth('w', ['posts:write'])
      const res = await t.request({ method: 'POST', url: '/imports', headers: { ...writer, 'content-type': XML }, payload: wxr([]) })
      assert.equal(res.statusCode, 403)
      const other = await t.auth('other-admin', ['admin'])
      const hidden = await t.request({ method: 'GET', url: `/imports/${edge.id}`, headers: other })
      assert.equal(hidden.statusCode, 404)
      assert.equal(json(hidden).code, 'IMPORT_NOT_FOUND')
    })
  })

  describe(`POST /imports: limits and bad input [${kind}]`, () => {
    let t: TestApp
    let admin: Headers
    before(async () => {
      t = await buildTestApp(kind, FAST)
      admin = await t.auth('root', ['admin'])
    })

    async function post (payload: string | Buffer, type = XML) {
      return await t.request({ method: 'POST', url: '/imports', headers: { ...admin, 'content-type': type }, payload })
    }

    it('answers 415 for a file that is neither format, and for XML sent as JSON or JSON sent as XML', async () => {
      const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
      for (const [payload, type] of [[png, XML], ['not an export', XML], [wxr([]), JSON_TYPE], ['{"db":[]}', XML], ['<feed xmlns="http://www.w3.org/2005/Atom"></feed>', XML], ['', XML]] as const) {
        const res = await post(payload, type)
        assert.equal(res.statusCode, 415, `${String(payload).slice(0, 20)} as ${type}: ${res.body}`)
        assert.equal(json(res).code, 'UNSUPPORTED_MEDIA_TYPE')
      }
      const csv = await t.request({ method: 'POST', url: '/imports', headers: { ...admin, 'content-type': 'text/csv' }, payload: 'a,b' })
      assert.equal(csv.statusCode, 415)
    })

    it('refuses billion laughs and an external entity at once (422): their DOCTYPE is in the first bytes', async () => {
      const laughs = '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>\n<rss><channel><item><title>&lol3;</title></item></channel></rss>'
      const external = '<?xml version="1.0"?>\n<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<rss><channel><item><title>&xxe;</title></item></channel></rss>'
      for (const payload of [laughs, external]) {
        const res = await post(payload)
        assert.equal(res.statusCode, 422, res.body)
        assert.equal(json(res).code, 'IMPORT_UNREADABLE')
        assert.match(json(res).detail, /DOCTYPE/)
      }
    })

    it('fails an import whose DOCTYPE comes after the first bytes, with a reason; nothing is expanded or written', async () => {
      const comment = `<!-- ${'padding '.repeat(10_000)} -->`
      const payload = `<?xml version="1.0"?>\n${comment}\n<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<rss><channel><wp:wxr_version>1.2</wp:wxr_version><item><title>&xxe;</title><wp:post_type>post</wp:post_type></item></channel></rss>`
      const job = await importFile(t, payload, XML, admin)
      assert.equal(job.status, 'failed')
      assert.match(job.failure, /DOCTYPE/)
      assert.equal(job.report.posts.created, 0)
    })

    it('imports the items before a truncation, and warns where the file broke off', async () => {
      const whole = wxr([wxrPost(201, 'Before the cut'), wxrPost(202, 'Cut in half')])
      const truncated = whole.slice(0, whole.indexOf('Cut in half') + 5)
      const job = await importFile(t, truncated, XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.report.posts.created, 1)
      assert.ok(job.report.warnings.some((w: any) => w.item === 'file' && /not well-formed/.test(w.message)))
      assert.ok((await allPosts(t, admin)).some(p => p.title === 'Before the cut'))
    })

    it('fails an RSS 2.0 feed (no WordPress export namespace) with a reason, and writes nothing', async () => {
      const before = (await allPosts(t, admin)).length
      const feed = '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>A feed</title><link>https://feed.example/</link><item><title>Feed item</title><link>https://feed.example/1</link><guid>https://feed.example/1</guid><content:encoded><![CDATA[<p>Not an export.</p>]]></content:encoded></item></channel></rss>'
      const job = await importFile(t, feed, 'application/rss+xml', admin)
      assert.equal(job.status, 'failed')
      assert.match(job.failure, /RSS feed, not a WordPress export/)
      assert.equal((await allPosts(t, admin)).length, before)
    })

    it('reads bytes that are not UTF-8 as U+FFFD with a warning, and imports every post', async () => {
      const [head, tail] = wxr([wxrPost(301, 'Bad bytes', '<p>caf\u0000</p>'), wxrPost(302, 'After them')]).split('\u0000')
      const payload = Buffer.concat([Buffer.from(head!), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(tail!)])
      const job = await importFile(t, payload, XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.report.posts.created, 2)
      assert.ok(job.report.warnings.some((w: any) => /not UTF-8/.test(w.message)))
      const bad = (await allPosts(t, admin)).find(p => p.title === 'Bad bytes')
      assert.match(bad.content, /caf\uFFFD/)
    })

    it('reads a Ghost export of an unknown version by its shape, with a warning; a JSON without posts fails with a reason', async () => {
      const job = await importFile(t, ghost([ghostPost('g1', 'From the future')], '99.1.0'), JSON_TYPE, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.report.posts.created, 1)
      assert.ok(job.report.warnings.some((w: any) => /99\.1\.0/.test(w.message)))
      const post = (await allPosts(t, admin)).find(p => p.title === 'From the future')
      assert.deepEqual(post.tags, ['Travel'], 'an internal tag (#…) is no reader\'s tag')
      assert.equal(post.author, 'ann')

      const none = await importFile(t, '{"hello": "world"}', JSON_TYPE, admin)
      assert.equal(none.status, 'failed')
      assert.match(none.failure, /not a Ghost export/)
      const truncated = ghost([ghostPost('g2', 'Never written')]).slice(0, -20)
      const broken = await importFile(t, truncated, JSON_TYPE, admin)
      assert.equal(broken.status, 'failed')
      assert.match(broken.failure, /not valid JSON/)
      assert.ok(!(await allPosts(t, admin)).some(p => p.title === 'Never written'))
    })

    it('maps Ghost\'s statuses, pages, excerpts and scheduled posts', async () => {
      const job = await importFile(t, ghost([
        ghostPost('s1', 'Ghost draft', { status: 'draft', published_at: null }),
        ghostPost('s2', 'Ghost scheduled', { status: 'scheduled', published_at: '2099-05-06T07:08:09.000Z' }),
        ghostPost('s3', 'Ghost page', { type: 'page' }),
        ghostPost('s4', 'Ghost excerpt', { custom_excerpt: 'Told apart.' }),
        ghostPost('s5', 'Ghost lexical only', { html: null, lexical: '{"root":{}}' }),
      ]), JSON_TYPE, admin)
      assert.deepEqual(job.report.posts, { created: 3, updated: 0, unchanged: 0, skipped: 2 })
      const posts = new Map((await allPosts(t, admin)).map(p => [p.title, p]))
      assert.equal(posts.get('Ghost draft').status, 'draft')
      assert.equal(posts.get('Ghost scheduled').publish_at, '2099-05-06T07:08:09.000Z')
      assert.equal(posts.get('Ghost excerpt').excerpt, 'Told apart.')
      assert.ok(job.report.warnings.some((w: any) => /lexical only/.test(w.item) && /neither HTML nor Markdown/.test(w.message)))
    })

    // Ghost's editor documents, for posts whose export holds no HTML.
    const text = (s: string, format = 0) => ({ type: 'extended-text', text: s, format, detail: 0, mode: 'normal', style: '', version: 1 })
    const block = (type: string, children: object[], extra: object = {}) => ({ type, children, direction: 'ltr', format: '', indent: 0, version: 1, ...extra })

    it('reads a post kept only as Lexical (Ghost 5 and 6) into Markdown; a card it cannot show is a warning on that post', async () => {
      const lexical = JSON.stringify({
        root: block('root', [
          block('extended-heading', [text('Getting there')], { tag: 'h2' }),
          block('paragraph', [text('Take the '), text('night', 1), text(' train, '), block('link', [text('timetable')], { url: 'https://example.com/times', rel: null, target: null, title: null }), text(' here.')]),
          block('list', [block('listitem', [text('Passport')], { value: 1 }), block('listitem', [text('Snacks', 2)], { value: 2 })], { listType: 'bullet', start: 1, tag: 'ul' }),
          block('list', [block('listitem', [text('Board')], { value: 1 }), block('listitem', [text('Sleep')], { value: 2 })], { listType: 'number', start: 1, tag: 'ol' }),
          block('extended-quote', [text('Travel is the only thing you buy that makes you richer.')]),
          { type: 'image', version: 1, src: 'https://example.com/images/train.jpg', width: 800, height: 600, title: '', alt: 'A night train', caption: 'The <b>sleeper</b>', cardWidth: 'regular', href: '' },
          { type: 'codeblock', version: 1, code: 'const seat = 42 < 43', language: 'js', caption: '' },
          { type: 'horizontalrule', version: 1 },
          { type: 'signup', version: 1, header: 'Subscribe' },
          block('paragraph', [text('The end, with '), text('code', 16), text('.')]),
        ]),
      })
      const job = await importFile(t, ghost([ghostPost('lx1', 'Lexical trip', { html: null, lexical })]), JSON_TYPE, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.posts, { created: 1, updated: 0, unchanged: 0, skipped: 0 })
      const post = (await allPosts(t, admin)).find(p => p.title === 'Lexical trip')
      assert.equal(post.content, [
        '## Getting there',
        'Take the **night** train, [timetable](https://example.com/times) here.',
        '-   Passport\n-   _Snacks_',
        '1.  Board\n2.  Sleep',
        '> Travel is the only thing you buy that makes you richer.',
        '![A night train](https://example.com/images/train.jpg)',
        'The **sleeper**',
        '```js\nconst seat = 42 < 43\n```',
        '* * *',
        'The end, with `code`.',
      ].join('\n\n'))
      const warned = job.report.warnings.filter((w: any) => /Lexical trip/.test(w.item))
      assert.equal(warned.length, 1, JSON.stringify(job.report.warnings))
      assert.match(warned[0].message, /"signup"/)
    })

    it('reads a post kept only as mobiledoc (Ghost 1 to 4): sections, markups, a Markdown card and an image card', async () => {
      const mobiledoc = JSON.stringify({
        version: '0.3.1',
        atoms: [['soft-return', '', {}]],
        markups: [['a', ['href', 'https://example.com/map']], ['strong']],
        cards: [['markdown', { markdown: '### From Markdown\n\n- one\n- two' }], ['image', { src: 'https://example.com/images/map.png', alt: 'Map', caption: '' }], ['paywall', {}]],
        sections: [
          [1, 'h2', [[0, [], 0, 'Route']]],
          [1, 'p', [[0, [], 0, 'See the '], [0, [0], 1, 'map'], [0, [], 0, ', '], [0, [1], 1, 'twice'], [1, [], 0, 0], [0, [], 0, 'then go.']]],
          [3, 'ul', [[[0, [], 0, 'North']], [[0, [], 0, 'South']]]],
          [10, 0],
          [10, 1],
          [10, 2],
        ],
      })
      const job = await importFile(t, ghost([ghostPost('md1', 'Mobiledoc route', { html: null, mobiledoc })], '4.48.0'), JSON_TYPE, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      const post = (await allPosts(t, admin)).find(p => p.title === 'Mobiledoc route')
      assert.equal(post.content, [
        '## Route',
        'See the [map](https://example.com/map), **twice**  \nthen go.',
        '-   North\n-   South',
        '### From Markdown',
        '-   one\n-   two',
        '![Map](https://example.com/images/map.png)',
      ].join('\n\n'))
      assert.ok(job.report.warnings.some((w: any) => /Mobiledoc route/.test(w.item) && /"paywall"/.test(w.message)))
    })

    it('an editor document that is not JSON is a warning on its post, and the post is skipped for having no content', async () => {
      const job = await importFile(t, ghost([ghostPost('bad1', 'Broken lexical', { html: null, lexical: '{"root":' })]), JSON_TYPE, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.posts, { created: 0, updated: 0, unchanged: 0, skipped: 1 })
      assert.ok(job.report.warnings.some((w: any) => /Broken lexical/.test(w.item) && /could not be read/.test(w.message)))
    })
  })

  describe(`POST /imports: the size limit [${kind}]`, () => {
    const LIMIT = 4096
    let t: TestApp
    let admin: Headers
    before(async () => {
      t = await buildTestApp(kind, { ...FAST, IMPORT_MAX_BYTES: String(LIMIT) })
      admin = await t.auth('root', ['admin'])
    })

    /** A WXR of one post padded with a comment to exactly `size` bytes. */
    function sized (size: number): Buffer {
      const bare = wxr([wxrPost(1, 'Sized')], '<!---->')
      const pad = size - Buffer.byteLength(bare)
      return Buffer.from(wxr([wxrPost(1, 'Sized')], `<!--${'x'.repeat(pad)}-->`))
    }

    it('takes a file of exactly IMPORT_MAX_BYTES and refuses one byte more with 413, by Content-Length or by counting', async () => {
      const ok = await importFile(t, sized(LIMIT), XML, admin)
      assert.equal(ok.status, 'succeeded', ok.failure)
      const over = await t.request({ method: 'POST', url: '/imports', headers: { ...admin, 'content-type': XML }, payload: sized(LIMIT + 1) })
      assert.equal(over.statusCode, 413, over.body)
      assert.equal(json(over).code, 'IMPORT_TOO_LARGE')
      const streamed = await t.request({ method: 'POST', url: '/imports', headers: { ...admin, 'content-type': XML }, payload: Readable.from([sized(LIMIT + 1)]) })
      assert.equal(streamed.statusCode, 413, streamed.body)
      const uploads = await t.store.imports.readUpload('none', 0, 1)
      assert.deepEqual(uploads, [])
    })
  })
}

describe('POST /imports: the default limit', () => {
  it('refuses 100 MiB + 1 with 413 before storing it', async () => {
    const t = await buildTestApp('sqlite', FAST)
    const admin = await t.auth('root', ['admin'])
    const res = await t.request({ method: 'POST', url: '/imports', headers: { ...admin, 'content-type': XML }, payload: Buffer.alloc(100 * 1024 * 1024 + 1, 0x20) })
    assert.equal(res.statusCode, 413)
    assert.equal(json(res).code, 'IMPORT_TOO_LARGE')
  })
})
