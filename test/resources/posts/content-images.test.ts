import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

for (const kind of await storeKinds()) {
  describe(`images of the service in a post's content (${kind})`, () => {
    let t: TestApp
    let headers: Record<string, string>
    let id: string
    before(async () => {
      t = await buildTestApp(kind)
      headers = await t.auth('alice', ['posts:write'])
      const image = await sharp({ create: { width: 1000, height: 600, channels: 3, background: 'teal' } }).png().toBuffer()
      id = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: image })).id
    })

    const post = async (content: string) => {
      const res = await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Pictures', content } })
      assert.equal(res.statusCode, 201, res.body)
      return json(res).content_html as string
    }

    it('renders them with srcset, sizes, width, height, lazy loading and async decoding', async () => {
      const html = await post(`Look:\n\n![The bay](/media/${id}/file)`)
      const srcset = [320, 640, 960].map(w => `/media/${id}/image?w=${w} ${w}w`).join(', ')
      assert.ok(html.includes(`<img src="/media/${id}/image?w=960" srcset="${srcset}" sizes="(max-width: 800px) 100vw, 800px" width="1000" height="600" loading="lazy" decoding="async" alt="The bay">`), html)
    })

    it('knows them absolute, under a version prefix, or as /image, keeping the origin', async () => {
      const html = await post(`![](https://blog.example.com/v2/media/${id}/image?w=640)`)
      assert.match(html, new RegExp(`<img src="https://blog.example.com/media/${id}/image\\?w=960" srcset="https://blog.example.com/media/${id}/image\\?w=320 320w, `))
      assert.match(html, /width="1000" height="600"/)
    })

    it('renders other images, and unknown media, as before', async () => {
      const html = await post('![x](https://elsewhere.example/a.png) ![y](/media/AAAAAAAAAAAAAAAAAAAAAA/file)')
      assert.ok(html.includes('<img src="https://elsewhere.example/a.png" alt="x">'), html)
      assert.ok(html.includes('<img src="/media/AAAAAAAAAAAAAAAAAAAAAA/file" alt="y">'), html)
    })

    it('renders them again on a change of the post', async () => {
      const made = await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Later', content: 'none yet' } })
      const patched = await t.request({ method: 'PATCH', url: `/posts/${json(made).id as number}`, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ content: `![now](/media/${id}/file)` }) })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.match(json(patched).content_html, /srcset=/)
    })
  })
}
