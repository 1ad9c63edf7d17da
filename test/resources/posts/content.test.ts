import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import Parser from 'rss-parser'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

type Headers = Record<string, string>
const MERGE = 'application/merge-patch+json'

const jsonFeedSchema = JSON.parse(fs.readFileSync(new URL('../../fixtures/json-feed-1.1.schema.json', import.meta.url), 'utf8')) as object
const ajv = new Ajv({ allErrors: true, strict: false })
addFormats.default(ajv)
const validJsonFeed = ajv.compile(jsonFeedSchema)

function codes (body: { errors?: { field: string, code: string }[] }): string[] {
  return (body.errors ?? []).map(e => `${e.field}:${e.code}`).sort()
}

function nextLink (link: string | undefined): string | undefined {
  return /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1]
}

for (const kind of await storeKinds()) {
  describe(`post content: slugs, tags, excerpts, HTML [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    let bob: Headers
    let admin: Headers
    before(async () => {
      t = await buildTestApp(kind, { PUBLIC_BASE_URL: 'https://blog.example.com/' })
      alice = await t.auth('alice', ['posts:write'])
      bob = await t.auth('bob', ['posts:write'])
      admin = await t.auth('root', ['admin'])
    })

    const create = async (body: object, headers: Headers = alice) => await t.request({ method: 'POST', url: '/posts', headers, payload: body })
    const patch = async (id: number, body: object, headers: Headers = alice) =>
      await t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...headers, 'content-type': MERGE }, payload: JSON.stringify(body) })

    describe('slugs', () => {
      it('derives the slug from the title, folded to ASCII, with -2, -3 … when taken', async () => {
        const a = json(await create({ title: 'Crème brûlée!', content: '' }))
        const b = json(await create({ title: 'Crème  Brûlée', content: '' }))
        const c = json(await create({ title: 'creme brulee', content: '', status: 'draft' }, bob))
        assert.deepEqual([a.slug, b.slug, c.slug], ['creme-brulee', 'creme-brulee-2', 'creme-brulee-3'])
        assert.equal(json(await create({ title: '日本語 !!!', content: '' })).slug, 'post')
      })

      it('takes a slug given by the client; a taken one is 409 SLUG_TAKEN, drafts included', async () => {
        const draft = json(await create({ title: 'x', content: '', slug: 'hidden-draft', status: 'draft' }, bob))
        assert.equal(draft.slug, 'hidden-draft')
        const res = await create({ title: 'y', content: '', slug: 'hidden-draft' })
        assert.equal(res.statusCode, 409)
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        assert.equal(json(res).code, 'SLUG_TAKEN')
      })

      it('keeps the reading site\'s words from posts: given, 409 SLUG_TAKEN; derived, numbered; near words are free', async () => {
        for (const word of ['page', 'tag', 'author', 'search', 'p', 'assets', 'media']) {
          const given = await create({ title: 't', content: '', slug: word })
          assert.equal(given.statusCode, 409, word)
          assert.equal(json(given).code, 'SLUG_TAKEN')
        }
        assert.equal(json(await create({ title: 'Search', content: '' })).slug, 'search-2')
        assert.equal(json(await create({ title: 'Pages', content: '' })).slug, 'pages')
        const post = json(await create({ title: 'Authored', content: '' }))
        const renamed = await patch(post.id, { slug: 'author' })
        assert.equal(renamed.statusCode, 409)
        assert.equal(json(renamed).code, 'SLUG_TAKEN')
      })

      it('accepts a 100-character slug and refuses 101, and any other form, as INVALID_FORMAT', async () => {
        assert.equal((await create({ title: 't', content: '', slug: 'a'.repeat(100) })).statusCode, 201)
        assert.deepEqual(codes(json(await create({ title: 't', content: '', slug: 'b'.repeat(101) }))), ['slug:INVALID_FORMAT'])
        for (const bad of ['', 'Upper', 'two--hyphens', '-lead', 'trail-', 'spa ce', 'ümlaut']) {
          assert.deepEqual(codes(json(await create({ title: 't', content: '', slug: bad }))), ['slug:INVALID_FORMAT'], bad)
        }
        assert.deepEqual(codes(json(await create({ title: 't', content: '', slug: 5 }))), ['slug:INVALID_TYPE'])
      })

      it('keeps slugs unique under concurrent creates (derived and given)', async () => {
        const derived = await Promise.all(Array.from({ length: 8 }, async () => json(await create({ title: 'Race condition', content: '' }))))
        assert.equal(new Set(derived.map(p => p.slug)).size, 8)
        const given = await Promise.all(Array.from({ length: 6 }, async () => (await create({ title: 'r', content: '', slug: 'only-one' })).statusCode))
        assert.deepEqual(given.sort(), [201, 409, 409, 409, 409, 409])
      })

      it('keeps the old slug of a rename as an alias: 301 to the new, refused to others, free again after delete', async () => {
        const p = json(await create({ title: 'Old name', content: '' }))
        assert.equal(p.slug, 'old-name')
        const renamed = await patch(p.id, { slug: 'new-name' })
        assert.equal(renamed.statusCode, 200)
        assert.equal(json(renamed).slug, 'new-name')
        const moved = await t.request({ method: 'GET', url: '/posts/by-slug/old-name' })
        assert.equal(moved.statusCode, 301)
        assert.equal(moved.headers.location, '/posts/by-slug/new-name')
        const v2 = await t.request({ method: 'GET', url: '/v2/posts/by-slug/old-name' })
        assert.equal(v2.headers.location, '/v2/posts/by-slug/new-name')
        assert.equal(json(await create({ title: 'Old name', content: '' }, bob)).slug, 'old-name-2', 'a derived slug skips aliases')
        assert.equal((await create({ title: 'x', content: '', slug: 'old-name' }, bob)).statusCode, 409)
        // The post itself may take its old slug back.
        assert.equal(json(await patch(p.id, { slug: 'old-name' })).slug, 'old-name')
        assert.equal((await t.request({ method: 'GET', url: '/posts/by-slug/new-name' })).headers.location, '/posts/by-slug/old-name')
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: alice })).statusCode, 204)
        assert.equal((await t.request({ method: 'GET', url: '/posts/by-slug/new-name' })).statusCode, 404)
        assert.equal(json(await create({ title: 'x', content: '', slug: 'new-name' }, bob)).slug, 'new-name')
        assert.equal(json(await create({ title: 'x', content: '', slug: 'old-name' }, bob)).slug, 'old-name')
      })

      it('keeps the slug on a PUT without one and on title changes', async () => {
        const p = json(await create({ title: 'Stable', content: '' }))
        const put = json(await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { title: 'Renamed title', content: 'c' } }))
        assert.equal(put.slug, 'stable')
      })
    })

    describe('GET /posts/by-slug/{slug}', () => {
      it('answers as GET /posts/{id} does: representation, ETag, 304, Last-Modified, Cache-Control, HEAD', async () => {
        const p = json(await create({ title: 'By slug', content: 'Hello' }))
        const byId = await t.request({ method: 'GET', url: `/posts/${p.id}` })
        const bySlug = await t.request({ method: 'GET', url: '/posts/by-slug/by-slug' })
        assert.equal(bySlug.statusCode, 200)
        assert.deepEqual(json(bySlug), json(byId))
        assert.equal(bySlug.headers.etag, byId.headers.etag)
        assert.equal(bySlug.headers['last-modified'], byId.headers['last-modified'])
        assert.equal(bySlug.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300')
        const again = await t.request({ method: 'GET', url: '/posts/by-slug/by-slug', headers: { 'if-none-match': String(bySlug.headers.etag) } })
        assert.equal(again.statusCode, 304)
        const head = await t.request({ method: 'HEAD', url: '/posts/by-slug/by-slug' })
        assert.equal(head.statusCode, 200)
        assert.equal(head.body, '')
        const v2 = json(await t.request({ method: 'GET', url: '/v2/posts/by-slug/by-slug' }))
        assert.equal(v2.postId, p.id)
        assert.equal(v2._links.self.href, `/v2/posts/${p.id}`)
      })

      it('hides drafts from everyone but their author and admins (404 POST_NOT_FOUND)', async () => {
        json(await create({ title: 'Secret draft', content: '', status: 'draft' }))
        const anon = await t.request({ method: 'GET', url: '/posts/by-slug/secret-draft' })
        assert.equal(anon.statusCode, 404)
        assert.equal(json(anon).code, 'POST_NOT_FOUND')
        assert.equal((await t.request({ method: 'GET', url: '/posts/by-slug/secret-draft', headers: bob })).statusCode, 404)
        const own = await t.request({ method: 'GET', url: '/posts/by-slug/secret-draft', headers: alice })
        assert.equal(own.statusCode, 200)
        assert.equal(own.headers['cache-control'], 'private, no-store')
        assert.equal((await t.request({ method: 'GET', url: '/posts/by-slug/secret-draft', headers: admin })).statusCode, 200)
        assert.equal((await t.request({ method: 'GET', url: '/posts/by-slug/No-Such_Slug' })).statusCode, 404)
      })
    })

    describe('tags', () => {
      it('stores tags trimmed, the first spelling of case-insensitive equals, in order', async () => {
        const p = json(await create({ title: 't', content: '', tags: [' Node ', 'TypeScript', 'node', 'NODE'] }))
        assert.deepEqual(p.tags, ['Node', 'TypeScript'])
        assert.deepEqual(json(await create({ title: 't', content: '' })).tags, [])
      })

      it('accepts 20 tags of 50 characters and refuses 21 tags or 51 characters or a blank one', async () => {
        const twenty = Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(50, 'x'))
        assert.equal((await create({ title: 't', content: '', tags: twenty })).statusCode, 201)
        assert.deepEqual(codes(json(await create({ title: 't', content: '', tags: [...twenty, 'one-more'] }))), ['tags:TOO_LONG'])
        assert.deepEqual(codes(json(await create({ title: 't', content: '', tags: ['y'.repeat(51)] }))), ['tags/0:TOO_LONG'])
        assert.deepEqual(codes(json(await create({ title: 't', content: '', tags: ['ok', '   '] }))), ['tags/1:BLANK'])
        assert.deepEqual(codes(json(await create({ title: 't', content: '', tags: 'a,b' }))), ['tags:INVALID_TYPE'])
      })
    })

    describe('excerpts and HTML', () => {
      it('derives the excerpt from the content\'s plain text, and keeps one given (500 pass, 501 refused)', async () => {
        const p = json(await create({ title: 't', content: '# Heading\n\nSome *emphasis* and a [link](https://a.example).' }))
        assert.equal(p.excerpt, 'Heading Some emphasis and a link.')
        assert.equal(json(await create({ title: 't', content: 'x', excerpt: null })).excerpt, 'x')
        assert.equal(json(await create({ title: 't', content: 'x', excerpt: 'e'.repeat(500) })).excerpt, 'e'.repeat(500))
        assert.deepEqual(codes(json(await create({ title: 't', content: 'x', excerpt: 'e'.repeat(501) }))), ['excerpt:TOO_LONG'])
        const long = json(await create({ title: 't', content: 'word '.repeat(100) }))
        assert.ok(long.excerpt.endsWith('word…'))
        assert.ok(Array.from(long.excerpt as string).length <= 201)
      })

      it('follows the content while derived, and stays put once given', async () => {
        const p = json(await create({ title: 't', content: 'first' }))
        assert.equal(json(await patch(p.id, { content: 'second' })).excerpt, 'second')
        const roundTrip = json(await t.request({ method: 'GET', url: `/posts/${p.id}`, headers: alice }))
        const put = json(await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { ...roundTrip, content: 'third' } }))
        assert.equal(put.excerpt, 'third', 'a derived excerpt sent back unchanged stays derived')
        assert.equal(json(await patch(p.id, { excerpt: 'Mine' })).excerpt, 'Mine')
        assert.equal(json(await patch(p.id, { content: 'fourth' })).excerpt, 'Mine')
        assert.equal(json(await patch(p.id, { excerpt: null })).excerpt, 'fourth')
      })

      it('renders Markdown to HTML at write time, escaping raw HTML and dropping unsafe URLs', async () => {
        const p = json(await create({ title: 't', content: '**b** ~~s~~ <script>alert(1)</script> [x](javascript:alert(1)) https://a.example\n\n|a|\n|-|\n|1|' }))
        assert.match(p.content_html, /<strong>b<\/strong> <s>s<\/s> &lt;script&gt;alert\(1\)&lt;\/script&gt;/)
        assert.doesNotMatch(p.content_html, /<script|href="javascript/)
        assert.match(p.content_html, /<a href="https:\/\/a.example">/)
        assert.match(p.content_html, /<table>/)
        assert.match(json(await patch(p.id, { content: '_new_' })).content_html, /<em>new<\/em>/)
      })

      it('renders 100 000 characters of hostile nesting safely, within the request', async () => {
        for (const content of ['>'.repeat(100_000), '['.repeat(100_000), '*a'.repeat(50_000), '<'.repeat(100_000)]) {
          const res = await create({ title: 'hostile', content })
          assert.equal(res.statusCode, 201)
          assert.doesNotMatch(json(res).content_html, /<script/)
        }
      })

      it('refuses to let a patch set content_html or published_at (422 READ_ONLY)', async () => {
        const p = json(await create({ title: 't', content: '' }))
        assert.deepEqual(codes(json(await patch(p.id, { content_html: '<script>' }))), ['content_html:READ_ONLY'])
        assert.deepEqual(codes(json(await patch(p.id, { published_at: null }))), ['published_at:READ_ONLY'])
      })
    })

    describe('published_at', () => {
      it('is null for drafts, set on the first publication, kept through edits, unpublishing and republishing', async () => {
        const p = json(await create({ title: 't', content: '', status: 'draft' }))
        assert.equal(p.published_at, null)
        const published = json(await patch(p.id, { status: 'published' }))
        assert.match(published.published_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        assert.equal(json(await patch(p.id, { title: 'edited' })).published_at, published.published_at)
        assert.equal(json(await patch(p.id, { status: 'draft' })).published_at, published.published_at)
        assert.equal(json(await patch(p.id, { status: 'published' })).published_at, published.published_at)
        const direct = json(await create({ title: 't', content: '' }))
        assert.equal(direct.published_at, direct.created_at)
      })
    })
  })

  describe(`a list by one tag, in created_at order [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice', ['posts:write'])
      const bob = await t.auth('bob', ['posts:write'])
      // Eleven posts; every fifth one is a draft (bob's no one else sees), odd ones are by bob, some hold two tags.
      for (let i = 0; i < 11; i++) {
        const tags = i % 2 === 0 ? ['Even'] : i % 3 === 0 ? ['odd', 'three'] : ['Odd']
        await t.request({ method: 'POST', url: '/posts', headers: i % 2 === 1 ? bob : alice, payload: { title: `Post ${i}`, content: '', tags, status: i % 5 === 0 ? 'draft' : 'published' } })
      }
    })

    /** Every id of a list, following its next links, `limit` at a time. */
    const all = async (query: string, headers: Headers = {}) => {
      const ids: number[] = []
      let url: string | undefined = `/posts?${query}`
      while (url !== undefined) {
        const res = await t.request({ method: 'GET', url, headers })
        assert.equal(res.statusCode, 200, res.body)
        ids.push(...(json(res) as { id: number }[]).map(p => p.id))
        url = nextLink(res.headers.link as string | undefined)
      }
      return ids
    }

    it('pages a tag in the same order as the whole list, each post once, visibility applied, both ways', async () => {
      for (const [headers, viewer] of [[{}, 'anonymous'], [alice, 'alice']] as const) {
        for (const sort of ['', '&sort=created_at']) {
          const whole = await Promise.all((json(await t.request({ method: 'GET', url: `/posts?limit=100${sort}`, headers })) as { id: number }[])
            .map(async p => json(await t.request({ method: 'GET', url: `/posts/${p.id}`, headers })) as { id: number, tags: string[] }))
          for (const tag of ['odd', 'even', 'three']) {
            const expected = whole.filter(p => p.tags.some(x => x.toLowerCase() === tag)).map(p => p.id)
            assert.ok(expected.length > 1, `${tag} holds posts for ${viewer}`)
            assert.deepEqual(await all(`tag=${tag}&limit=2${sort}`, headers), expected, `${viewer} tag=${tag}${sort}`)
          }
        }
      }
    })
  })

  describe(`post lists: new filters and sorts [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    let admin: Headers
    const ids: Record<string, number> = {}
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice', ['posts:write'])
      const bob = await t.auth('bob', ['posts:write'])
      admin = await t.auth('root', ['admin'])
      const make = async (name: string, body: object, headers = alice) => {
        ids[name] = json(await t.request({ method: 'POST', url: '/posts', headers, payload: { content: '', ...body } })).id
      }
      await make('a', { title: 'Alpha', tags: ['Node', 'Web'] })
      await make('b', { title: 'Bravo', tags: ['node'], status: 'draft' })
      await make('c', { title: 'Charlie', tags: ['Rust'] }, bob)
      await make('d', { title: 'Delta', content: 'unrelated words', tags: ['Gardening'] }, bob)
      await make('e', { title: 'Echo', status: 'archived' })
    })

    const list = async (query: string, headers: Headers = {}) => {
      const res = await t.request({ method: 'GET', url: `/posts?${query}`, headers })
      assert.equal(res.statusCode, 200, res.body)
      return (json(res) as { id: number }[]).map(p => p.id)
    }

    it('filters by tag, case-insensitively, any of a comma list, visibility applied', async () => {
      assert.deepEqual(await list('tag=NODE&sort=id'), [ids.a])
      assert.deepEqual(await list('tag=node&sort=id', alice), [ids.a, ids.b])
      assert.deepEqual(await list('tag=rust,web&sort=id'), [ids.a, ids.c])
      assert.deepEqual(await list('tag=nothing'), [])
    })

    it('filters by author, slug, published_after/before and updated_since', async () => {
      assert.deepEqual(await list('author=bob&sort=id'), [ids.c, ids.d])
      assert.deepEqual(await list('slug=charlie'), [ids.c])
      const c = json(await t.request({ method: 'GET', url: `/posts/${ids.c}` }))
      assert.deepEqual(await list(`published_after=${encodeURIComponent(c.published_at)}&sort=id`), [ids.d])
      assert.deepEqual(await list(`published_before=${encodeURIComponent(c.published_at)}&sort=id`), [ids.a])
      assert.deepEqual(await list(`updated_since=${encodeURIComponent(c.updated_at)}&sort=id`), [ids.c, ids.d])
      // An offset names the same instant.
      const plusTwo = new Date(new Date(c.published_at).getTime()).toISOString().replace('Z', '+00:00')
      assert.deepEqual(await list(`published_after=${encodeURIComponent(plusTwo)}&sort=id`), [ids.d])
    })

    it('refuses timestamps that are not RFC 3339 (422 naming the parameter)', async () => {
      for (const p of ['published_after', 'published_before', 'updated_since']) {
        const res = await t.request({ method: 'GET', url: `/posts?${p}=yesterday` })
        assert.equal(res.statusCode, 422)
        assert.deepEqual(codes(json(res)), [`${p}:INVALID_FORMAT`])
      }
    })

    it('combines every filter with q, the other filters, offset paging and counts', async () => {
      await t.searchIndexed()
      const res = await t.request({ method: 'GET', url: '/posts?tag=node,rust&author=alice&q=alpha&page=1&limit=1', headers: { prefer: 'count=exact' } })
      assert.deepEqual((json(res) as { id: number }[]).map(p => p.id), [ids.a])
      assert.equal(res.headers['x-total-count'], '1')
      assert.deepEqual(await list('q=gardening'), [ids.d], 'q matches tags')
    })

    it('sorts by published_at with nulls last both ways, and pages by cursor through the same order', async () => {
      const asc = await list('sort=published_at', admin)
      const desc = await list('sort=-published_at', admin)
      const nulls = [ids.b, ids.e]
      assert.deepEqual(asc.slice(-2).sort(), [...nulls].sort())
      assert.deepEqual(desc.slice(-2).sort(), [...nulls].sort())
      assert.deepEqual(asc.slice(0, 3), [ids.a, ids.c, ids.d])
      assert.deepEqual(desc.slice(0, 3), [ids.d, ids.c, ids.a])
      for (const sort of ['published_at', '-published_at', 'slug', '-slug', 'published_at:desc,title']) {
        const whole = await list(`sort=${sort}`, admin)
        const paged: number[] = []
        let url: string | undefined = `/posts?sort=${sort}&limit=2`
        while (url !== undefined) {
          const res = await t.request({ method: 'GET', url, headers: admin })
          paged.push(...(json(res) as { id: number }[]).map(p => p.id))
          url = nextLink(res.headers.link as string | undefined)
        }
        assert.deepEqual(paged, whole, sort)
      }
      assert.deepEqual(await list('sort=slug'), [ids.a, ids.c, ids.d])
    })

    it('pages a filtered list by cursor and by page alike, with counts', async () => {
      const query = 'tag=node,rust,web,gardening&sort=-published_at'
      const whole = await list(query, admin)
      assert.deepEqual(whole, [ids.d, ids.c, ids.a, ids.b])
      const byCursor: number[] = []
      let url: string | undefined = `/posts?${query}&limit=1`
      while (url !== undefined) {
        const res = await t.request({ method: 'GET', url, headers: { ...admin, prefer: 'count=exact' } })
        assert.equal(res.headers['x-total-count'], '4')
        byCursor.push(...(json(res) as { id: number }[]).map(p => p.id))
        url = nextLink(res.headers.link as string | undefined)
      }
      assert.deepEqual(byCursor, whole)
      const byPage = [...await list(`${query}&page=1&limit=3`, admin), ...await list(`${query}&page=2&limit=3`, admin)]
      assert.deepEqual(byPage, whole)
    })

    it('shows the new fields in list items only through fields', async () => {
      const plain = json(await t.request({ method: 'GET', url: '/posts?slug=alpha' }))
      assert.deepEqual(Object.keys(plain[0]).sort(), ['id', 'title'])
      const items = json(await t.request({ method: 'GET', url: '/posts?slug=alpha&fields=slug,tags,excerpt,published_at,content_html' }))
      assert.deepEqual(Object.keys(items[0]).sort(), ['content_html', 'excerpt', 'published_at', 'slug', 'tags'])
      assert.deepEqual(items[0].tags, ['Node', 'Web'])
    })

    it('GET /tags: counts of visible posts, default -count then name, sort, prefix q, paging, ETag', async () => {
      const anon = json(await t.request({ method: 'GET', url: '/tags' }))
      assert.deepEqual(anon, [{ name: 'Node', count: 1 }, { name: 'Gardening', count: 1 }, { name: 'Rust', count: 1 }, { name: 'Web', count: 1 }].sort((x, y) => x.name.toLowerCase() < y.name.toLowerCase() ? -1 : 1))
      const own = json(await t.request({ method: 'GET', url: '/tags', headers: alice }))
      assert.deepEqual(own[0], { name: 'Node', count: 2 }, 'her draft counts for her')
      assert.deepEqual(json(await t.request({ method: 'GET', url: '/tags?sort=-name' })).map((x: { name: string }) => x.name), ['Web', 'Rust', 'Node', 'Gardening'])
      assert.deepEqual(json(await t.request({ method: 'GET', url: '/tags?q=NO' })), [{ name: 'Node', count: 1 }])
      const first = await t.request({ method: 'GET', url: '/tags?limit=3&sort=name', headers: { prefer: 'count=exact' } })
      assert.equal(first.headers['x-total-count'], '4')
      assert.equal(first.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300')
      const second = await t.request({ method: 'GET', url: nextLink(first.headers.link as string)! })
      assert.deepEqual([...json(first), ...json(second)].map((x: { name: string }) => x.name), ['Gardening', 'Node', 'Rust', 'Web'])
      const etag = String(first.headers.etag)
      assert.match(etag, /^W\//)
      assert.equal((await t.request({ method: 'GET', url: '/tags?limit=3&sort=name', headers: { 'if-none-match': etag, prefer: 'count=exact' } })).statusCode, 304)
      assert.equal((await t.request({ method: 'GET', url: '/tags?sort=id' })).statusCode, 422)
      assert.equal((await t.request({ method: 'GET', url: '/tags?tagz=1' })).statusCode, 422)
    })
  })

  describe(`feeds [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    before(async () => {
      t = await buildTestApp(kind, { PUBLIC_BASE_URL: 'https://blog.example.com' })
      alice = await t.auth('alice', ['posts:write'])
      await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Draft', content: '', status: 'draft', tags: ['News'] } })
      for (let i = 1; i <= 22; i++) {
        await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: `Post ${i}`, content: `Body *${i}*`, tags: i % 2 === 0 ? ['Even', 'News'] : ['Odd'] } })
      }
      const hostile = await t.auth('<evil> & "quoted" ]]>', ['posts:write'])
      await t.request({ method: 'POST', url: '/posts', headers: hostile, payload: { title: '<script>alert(1)</script> & "q" ]]> \u0001', content: '<b>raw</b> &amp; [x](javascript:alert(1))', tags: ['a<b>&c', 'News'] } })
    })

    it('serves Atom 1.0 that an independent reader parses: 20 newest published, links, ids, escaping', async () => {
      const res = await t.request({ method: 'GET', url: '/feed.atom' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['content-type'], 'application/atom+xml; charset=utf-8')
      assert.equal(res.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300')
      assert.match(String(res.headers.etag), /^"/)
      assert.ok(res.headers['last-modified'])
      const feed = await new Parser().parseString(res.body)
      assert.equal(feed.items.length, 20)
      const top = feed.items[0]!
      assert.equal(top.title, '<script>alert(1)</script> & "q" ]]> ')
      assert.equal(top.author, '<evil> & "quoted" ]]>')
      assert.match(top.link!, /^https:\/\/blog\.example\.com\/posts\/by-slug\/script-alert-1-script-q$/)
      assert.match(top.id!, /^https:\/\/blog\.example\.com\/posts\/\d+$/)
      assert.doesNotMatch(top.content!, /<b>raw|href="javascript/)
      assert.match(top.content!, /&lt;b&gt;raw&lt;\/b&gt;/)
      assert.ok(!feed.items.some(i => i.title === 'Draft'))
      assert.equal(feed.items[1]!.title, 'Post 22')
      assert.match(res.body, /<category term="a&lt;b&gt;&amp;c"\/>/)
    })

    it('serves JSON Feed 1.1 valid by its schema, with the same entries', async () => {
      const res = await t.request({ method: 'GET', url: '/feed.json' })
      assert.equal(res.headers['content-type'], 'application/feed+json; charset=utf-8')
      const feed = json(res)
      assert.ok(validJsonFeed(feed) as boolean, JSON.stringify(validJsonFeed.errors))
      assert.equal(feed.items.length, 20)
      assert.equal(feed.feed_url, 'https://blog.example.com/feed.json')
      assert.deepEqual(feed.items[0].tags, ['a<b>&c', 'News'])
      assert.equal(feed.items[1].title, 'Post 22')
      assert.equal(feed.items[1].url, 'https://blog.example.com/posts/by-slug/post-22')
      assert.equal(feed.items[1].summary, 'Body 22')
      assert.equal(feed.items[1].content_html, '<p>Body <em>22</em></p>\n')
    })

    it('makes the feed of one tag, answers 304, and changes its ETag with a post', async () => {
      const even = json(await t.request({ method: 'GET', url: '/feed.json?tag=EVEN' }))
      assert.equal(even.items.length, 11)
      assert.ok(even.items.every((i: { tags: string[] }) => i.tags.includes('Even')))
      const first = await t.request({ method: 'GET', url: '/feed.atom?tag=odd' })
      assert.equal((await t.request({ method: 'GET', url: '/feed.atom?tag=odd', headers: { 'if-none-match': String(first.headers.etag) } })).statusCode, 304)
      await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'Another odd', content: '', tags: ['odd'] } })
      const after = await t.request({ method: 'GET', url: '/feed.atom?tag=odd', headers: { 'if-none-match': String(first.headers.etag) } })
      assert.equal(after.statusCode, 200)
      assert.notEqual(after.headers.etag, first.headers.etag)
      assert.equal((await t.request({ method: 'GET', url: '/feed.json?colour=red' })).statusCode, 422)
    })

    it('is the same with credentials and under a version prefix, and linked from GET /', async () => {
      const anon = await t.request({ method: 'GET', url: '/feed.json' })
      const withAuth = await t.request({ method: 'GET', url: '/v2/feed.json', headers: alice })
      assert.equal(withAuth.body, anon.body)
      assert.equal(withAuth.headers['cache-control'], 'public, max-age=60, stale-while-revalidate=300')
      const index = json(await t.request({ method: 'GET', url: '/' }))
      assert.equal(index._links.feed_atom.href, '/feed.atom')
      assert.equal(index._links.feed_json.href, '/feed.json')
      assert.equal(index._links.tags.href, '/tags')
    })
  })
}
