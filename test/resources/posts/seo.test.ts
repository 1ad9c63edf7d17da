import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import Parser from 'rss-parser'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

type Headers = Record<string, string>
const jsonFeedSchema = JSON.parse(fs.readFileSync(new URL('../../fixtures/json-feed-1.1.schema.json', import.meta.url), 'utf8')) as object
const ajv = new Ajv({ allErrors: true, strict: false })
addFormats.default(ajv)
const validJsonFeed = ajv.compile(jsonFeedSchema)

const SEO = { meta_title: 'A title for search', meta_description: 'What the post is about.', canonical_url: 'https://elsewhere.example/original' }

for (const kind of await storeKinds()) {
  describe(`SEO fields [${kind}]`, () => {
    let t: TestApp
    let alice: Headers
    before(async () => {
      t = await buildTestApp(kind, { PUBLIC_BASE_URL: 'https://blog.example.com' })
      alice = await t.auth('alice', ['posts:write'])
    })

    const create = async (body: object) => await t.request({ method: 'POST', url: '/posts', headers: alice, payload: { title: 'T', content: 'c', ...body } })
    const codes = (res: { body: string }) => (JSON.parse(res.body) as { errors: { field: string, code: string }[] }).errors.map(e => `${e.field}:${e.code}`)

    it('are null by default, in both versions, and kept as given', async () => {
      const plain = json(await create({}))
      assert.equal(plain.meta_title, null)
      assert.equal(plain.meta_description, null)
      assert.equal(plain.canonical_url, null)
      const res = await create(SEO)
      assert.equal(res.statusCode, 201)
      const post = json(res)
      for (const [k, v] of Object.entries(SEO)) assert.equal(post[k], v, k)
      const v2 = json(await t.request({ method: 'GET', url: `/v2/posts/${post.id}`, headers: alice }))
      for (const [k, v] of Object.entries(SEO)) assert.equal(v2[k], v, k)
    })

    it('takes each bound and refuses one more: meta_title 300, meta_description 500, canonical_url 2000', async () => {
      const url = (n: number) => `https://e.example/${'a'.repeat(n - 'https://e.example/'.length)}`
      const ok = await create({ meta_title: 'x'.repeat(300), meta_description: 'y'.repeat(500), canonical_url: url(2000) })
      assert.equal(ok.statusCode, 201, ok.body)
      assert.equal(json(ok).canonical_url.length, 2000)
      const empty = await create({ meta_title: '', meta_description: '' })
      assert.equal(empty.statusCode, 201)
      assert.equal(json(empty).meta_title, '')
      const bad = await create({ meta_title: 'x'.repeat(301), meta_description: 'y'.repeat(501), canonical_url: url(2001) })
      assert.equal(bad.statusCode, 422)
      assert.deepEqual(codes(bad).sort(), ['canonical_url:TOO_LONG', 'meta_description:TOO_LONG', 'meta_title:TOO_LONG'])
    })

    it('refuses a canonical_url that is relative or not http(s)', async () => {
      for (const bad of ['/posts/1', 'example.com/x', '//example.com/x', 'ftp://example.com/x', 'javascript:alert(1)', 'mailto:a@b.c', 'https://', 'https:// x', 42]) {
        const res = await create({ canonical_url: bad })
        assert.equal(res.statusCode, 422, String(bad))
        assert.equal(codes(res)[0]?.split(':')[0], 'canonical_url', String(bad))
      }
      for (const good of ['http://example.com', 'HTTPS://Example.com/a?b=c#d', 'https://example.com:8443/x']) {
        assert.equal((await create({ canonical_url: good })).statusCode, 201, good)
      }
    })

    it('are replaced by PUT (absent: null), kept by a merge patch of other members, offered by fields', async () => {
      const post = json(await create(SEO))
      const patched = await t.request({ method: 'PATCH', url: `/posts/${post.id}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ title: 'New' }) })
      assert.equal(json(patched).meta_title, SEO.meta_title)
      const put = await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { title: 'New', content: 'c' } })
      assert.equal(json(put).meta_title, null)
      assert.equal(json(put).canonical_url, null)
      const list = await t.request({ method: 'GET', url: `/posts?fields=id,meta_title,meta_description,canonical_url&slug=${post.slug}` })
      assert.deepEqual(json(list), [{ id: post.id, meta_title: null, meta_description: null, canonical_url: null }])
      assert.equal((await t.request({ method: 'GET', url: '/posts?fields=meta_titel' })).statusCode, 422)
    })

    it('records a revision when one of them alone changes, and a restore brings them back', async () => {
      const post = json(await create(SEO))
      const res = await t.request({ method: 'PATCH', url: `/posts/${post.id}`, headers: { ...alice, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ meta_description: 'Changed' }) })
      assert.equal(res.statusCode, 200)
      const revisions = json(await t.request({ method: 'GET', url: `/posts/${post.id}/revisions?fields=number,meta_description`, headers: alice }))
      assert.deepEqual(revisions, [{ number: 2, meta_description: 'Changed' }, { number: 1, meta_description: SEO.meta_description }])
      const first = json(await t.request({ method: 'GET', url: `/posts/${post.id}/revisions/1`, headers: alice }))
      for (const [k, v] of Object.entries(SEO)) assert.equal(first[k], v, k)
      await t.request({ method: 'PUT', url: `/posts/${post.id}`, headers: alice, payload: { title: 'T', content: 'c' } })
      const restored = await t.request({ method: 'POST', url: `/posts/${post.id}/revisions/1/restore`, headers: alice })
      assert.equal(restored.statusCode, 200)
      for (const [k, v] of Object.entries(SEO)) assert.equal(json(restored)[k], v, k)
    })

    it('gives feeds the canonical URL: Atom as a related link, JSON Feed as external_url', async () => {
      const post = json(await create({ title: 'Canonical elsewhere', ...SEO }))
      await create({ title: 'Canonical here' })
      const atom = await t.request({ method: 'GET', url: '/feed.atom' })
      const feed = await new Parser({ customFields: { item: [['link', 'links', { keepArray: true }]] } }).parseString(atom.body)
      const entry = feed.items.find(i => i.title === 'Canonical elsewhere') as unknown as { links: { $: { rel: string, href: string } }[] }
      assert.deepEqual(entry.links.map(l => [l.$.rel, l.$.href]), [
        ['alternate', `https://blog.example.com/posts/by-slug/${post.slug}`],
        ['related', SEO.canonical_url],
      ])
      const jf = json<{ items: { title: string, url: string, external_url?: string }[] }>(await t.request({ method: 'GET', url: '/feed.json' }))
      assert.ok(validJsonFeed(jf), JSON.stringify(validJsonFeed.errors))
      const item = jf.items.find(i => i.title === 'Canonical elsewhere')!
      assert.equal(item.external_url, SEO.canonical_url)
      assert.equal(item.url, `https://blog.example.com/posts/by-slug/${post.slug}`)
      assert.equal(jf.items.find(i => i.title === 'Canonical here')!.external_url, undefined)
    })
  })
}
