import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Resource } from '../../../src/http/contract/resources.ts'
import { RESOURCES } from '../../../src/registry.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { png } from './images.ts'
import { before } from '../../support/hooks.ts'

/** Stands for a resource whose rows hold images (a post's feature image), found by its capability. */
const held = new Set<string>()
const holders: Resource = {
  name: 'holders',
  description: 'Rows that hold images (a test fixture)',
  path: '/holders',
  indexed: false,
  schemas: [],
  routes: async () => {},
  imageHolder: { holds: async (_store, id) => held.has(id) },
}

for (const kind of await storeKinds()) {
  describe(`images as other resources see them (${kind})`, () => {
    let t: TestApp
    let headers: Record<string, string>
    before(async () => {
      t = await buildTestApp(kind, {}, { resources: [...RESOURCES, holders] })
      headers = await t.auth('alice', ['media:write'])
    })

    const catalogue = () => t.context.resources.find(r => r.images !== undefined)!.images!

    it('gives each image its size, alt, placeholder, url and srcset up to its own width', async () => {
      const m = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: await png(1000, 500) }))
      const small = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: await png(200, 100) }))
      const found = await catalogue().find(t.store, [m.id, small.id, 'AAAAAAAAAAAAAAAAAAAAAA'], t.config)
      assert.equal(found.size, 2)
      assert.deepEqual(found.get(m.id), {
        id: m.id,
        width: 1000,
        height: 500,
        alt: '',
        placeholder: m.placeholder,
        url: `/media/${m.id as string}/image`,
        srcset: [320, 640, 960].map(w => `/media/${m.id as string}/image?w=${w} ${w}w`).join(', '),
      })
      assert.equal(found.get(small.id)!.srcset, `/media/${small.id as string}/image?w=200 200w`)
    })

    it('knows the URLs of its images, absolute or not, with or without a version prefix', () => {
      const id = 'q2Yl0cS8m1c7pPz5dXhF3w'
      for (const url of [`/media/${id}/file`, `/v1/media/${id}/image?w=640`, `https://blog.example.com/v2/media/${id}/file`, `http://127.0.0.1:3000/media/${id}/image`]) {
        assert.equal(catalogue().idOf(url), id, url)
      }
      for (const url of ['/posts/1', `/media/${id}`, '/media/short/file', `/media/${id}/file/extra`, 'https://elsewhere.example/picture.png']) {
        assert.equal(catalogue().idOf(url), null, url)
      }
    })

    it('refuses to delete an image another resource holds: 409 MEDIA_IN_USE, nothing changed', async () => {
      const m = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: await png(10, 10) }))
      held.add(m.id)
      const refused = await t.request({ method: 'DELETE', url: `/media/${m.id as string}`, headers })
      assert.equal(refused.statusCode, 409)
      assert.equal(json(refused).code, 'MEDIA_IN_USE')
      assert.equal((await t.request({ method: 'GET', url: `/media/${m.id as string}/file` })).statusCode, 200)
      held.delete(m.id)
      assert.equal((await t.request({ method: 'DELETE', url: `/media/${m.id as string}`, headers })).statusCode, 204)
    })
  })
}
