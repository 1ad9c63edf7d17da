import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { png } from '../media/images.ts'
import { before } from '../../support/hooks.ts'

const MERGE = 'application/merge-patch+json'

for (const kind of await storeKinds()) {
  describe(`GET and PATCH /site (${kind})`, () => {
    let t: TestApp
    let admin: { authorization: string }
    before(async () => {
      // The site's listener is off in tests (SITE_PORT=0): its URL is then null.
      t = await buildTestApp(kind)
      admin = await t.auth('ann', ['admin'])
    })

    it('answers the defaults before anyone set anything, publicly, with a strong ETag and 304', async () => {
      const res = await t.request({ method: 'GET', url: '/site' })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(json(res), { title: 'Blog', description: '', language: 'en', logo: null, icon: null, cover_image: null, accent_color: '#1a56db', navigation: [], posts_per_page: 10, url: null })
      const etag = res.headers.etag as string
      assert.match(etag, /^"/)
      assert.equal((await t.request({ method: 'GET', url: '/site', headers: { 'if-none-match': etag } })).statusCode, 304)
    })

    it('is changed by an admin with a merge patch, which raises site.updated; null brings a default back', async () => {
      const first = await t.request({ method: 'GET', url: '/site' })
      const res = await t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE, 'if-match': first.headers.etag as string }, payload: { title: 'Notes', accent_color: '#00AA00', navigation: [{ label: 'About', url: '/about' }], posts_per_page: 5 } })
      assert.equal(res.statusCode, 200, res.body)
      const body = json(res)
      assert.equal(body.title, 'Notes')
      assert.equal(body.accent_color, '#00aa00')
      assert.deepEqual(body.navigation, [{ label: 'About', url: '/about' }])
      assert.notEqual(res.headers.etag, first.headers.etag)
      const events = await t.store.events.list(0, 100)
      assert.ok(events.some(e => e.type === 'site.updated'))
      const back = json(await t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE }, payload: { title: null } }))
      assert.equal(back.title, 'Blog')
      assert.equal(back.posts_per_page, 5)
    })

    it('answers 412 to a stale If-Match', async () => {
      const res = await t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE, 'if-match': '"stale"' }, payload: { title: 'X' } })
      assert.equal(res.statusCode, 412)
    })

    it('refuses bad values with 422 and field errors', async () => {
      for (const [field, value] of [['accent_color', 'red'], ['posts_per_page', 51], ['posts_per_page', 0], ['language', 'not a tag'], ['navigation', Array.from({ length: 21 }, () => ({ label: 'a', url: '/a' }))], ['navigation', [{ label: 'x', url: 'javascript:alert(1)' }]], ['navigation', [{ label: 'x', url: '//elsewhere.example' }]], ['logo', 'nosuchmedia'], ['colour', 'x']] as const) {
        const res = await t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE }, payload: { [field]: value } })
        assert.equal(res.statusCode, 422, `${field}: ${res.body}`)
        assert.ok(Array.isArray(json(res).errors), res.body)
      }
    })

    it('needs admin', async () => {
      assert.equal((await t.request({ method: 'PATCH', url: '/site', headers: { 'content-type': MERGE }, payload: { title: 'X' } })).statusCode, 401)
      const writer = await t.auth('bob', ['posts:write'])
      assert.equal((await t.request({ method: 'PATCH', url: '/site', headers: { ...writer, 'content-type': MERGE }, payload: { title: 'X' } })).statusCode, 403)
    })

    it('takes media ids for its images and shows them as a feature image is', async () => {
      const m = json(await t.request({ method: 'POST', url: '/media', headers: { ...admin, 'content-type': 'image/png' }, payload: await png(640, 480) }))
      const res = await t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE }, payload: { logo: m.id } })
      assert.equal(res.statusCode, 200, res.body)
      const logo = json(res).logo
      assert.equal(logo.id, m.id)
      assert.equal(logo.width, 640)
      assert.match(logo.srcset, /w=320 320w/)
      assert.equal(json(await t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': MERGE }, payload: { logo: null } })).logo, null)
    })
  })
}
