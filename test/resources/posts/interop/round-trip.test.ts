import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../../helper.ts'
import { allPosts, type Headers, importFile } from '../../imports/import-helper.ts'
import { untilValue } from '../../../support/poll.ts'
import { before } from '../../../support/hooks.ts'

const FAST = { IMPORT_POLL_MS: '20', EXPORT_POLL_MS: '20', RATE_LIMIT_MAX: '0', PUBLIC_BASE_URL: 'https://blog.example.com' }
const COMPARED = ['title', 'content', 'status', 'slug', 'tags', 'excerpt', 'published_at', 'publish_at', 'author'] as const

async function exported (t: TestApp, admin: Headers, format: string): Promise<{ type: string, body: Buffer }> {
  const res = await t.request({ method: 'POST', url: '/exports', headers: admin, payload: { format } })
  assert.equal(res.statusCode, 202, res.body)
  const job = await untilValue(async () => json(await t.request({ method: 'GET', url: res.headers.location!, headers: admin })), j => {
    assert.notEqual(j.status, 'failed', j.error)
    return j.status === 'succeeded'
  }, 60_000)
  const file = await t.request({ method: 'GET', url: job._links.download.href, headers: admin })
  assert.equal(file.statusCode, 200)
  return { type: String(file.headers['content-type']), body: file.rawPayload }
}

for (const kind of await storeKinds()) {
  describe(`moving out and in again: WXR [${kind}]`, () => {
    let from: TestApp
    let to: TestApp
    let admin: Headers
    before(async () => {
      from = await buildTestApp(kind, FAST)
      to = await buildTestApp(kind, FAST)
      admin = await from.auth('root', ['admin'])
      const ann = await from.auth('ann', ['posts:write'])
      const bob = await from.auth('bob', ['posts:write'])
      const write = async (headers: Headers, payload: object) => {
        const res = await from.request({ method: 'POST', url: '/posts', headers, payload })
        assert.equal(res.statusCode, 201, res.body)
        return json(res)
      }
      await write(ann, {
        title: 'Fish & chips <at> the "seaside"',
        content: '# Menu\n\n| dish | price |\n| --- | --- |\n| cod | 9 |\n\nSee [the pier](https://pier.example/) and `code ]]> here`.\n\n```js\nconst a = "]]>"\n```\n\n- one\n- two\n\n~~old~~ **new** _now_ – ünïcödé 日本語 🐟',
        tags: ['Food', 'Travel', 'ünïcödé'],
        excerpt: 'A given excerpt & more.',
      })
      await write(bob, { title: 'Plain published', content: 'Derived excerpt from this text.', slug: 'my-own-slug' })
      await write(ann, { title: 'A draft', content: 'Not yet.', status: 'draft', tags: ['wip'] })
      await write(ann, { title: 'Later', content: 'Soon.', status: 'scheduled', publish_at: '2099-07-08T09:10:11.000Z' })
      const gone = await write(bob, { title: 'Put away', content: 'Was public once.' })
      const put = await from.request({ method: 'PATCH', url: `/posts/${gone.id}`, headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { status: 'archived' } })
      assert.equal(put.statusCode, 200, put.body)
      await write(bob, { title: 'Archived never published', content: 'Hidden.', status: 'archived' })
    })

    it('exports a WXR 1.2 file, and importing it into an empty instance gives the same posts', async () => {
      const file = await exported(from, admin, 'wxr')
      assert.equal(file.type, 'application/rss+xml')
      const text = file.body.toString('utf8')
      assert.match(text, /^<\?xml version="1.0" encoding="UTF-8" \?>/)
      assert.match(text, /<wp:wxr_version>1\.2<\/wp:wxr_version>/)
      assert.match(text, /<link>https:\/\/blog\.example\.com\/posts\/by-slug\/my-own-slug<\/link>/)
      assert.match(text, /<wp:status><!\[CDATA\[future\]\]><\/wp:status>/)

      const toAdmin = await to.auth('root', ['admin'])
      const job = await importFile(to, file.body, 'application/xml', toAdmin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.posts, { created: 6, updated: 0, unchanged: 0, skipped: 0 })
      assert.deepEqual(job.report.warnings, [])
      assert.equal(job.report.redirects, 0, 'each post\'s link names its own slug')

      const pick = (p: any) => Object.fromEntries(COMPARED.map(k => [k, p[k]]))
      const before = (await allPosts(from, admin)).map(pick)
      const after = (await allPosts(to, toAdmin)).map(pick)
      assert.deepEqual(after, before)

      const again = await importFile(to, file.body, 'application/xml', toAdmin)
      assert.deepEqual(again.report.posts, { created: 0, updated: 0, unchanged: 6, skipped: 0 })
    })
  })
}
