import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

for (const kind of await storeKinds()) {
  describe(`a post's feature image (${kind})`, () => {
    let t: TestApp
    let headers: Record<string, string>
    let image: Record<string, any>
    before(async () => {
      t = await buildTestApp(kind)
      headers = await t.auth('alice', ['posts:write'])
      const bytes = await sharp({ create: { width: 700, height: 400, channels: 3, background: 'orange' } }).png().toBuffer()
      image = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: bytes }))
      await t.request({ method: 'PATCH', url: `/media/${image.id as string}`, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ alt: 'An orange' }) })
    })

    const expected = () => ({
      id: image.id,
      url: `/media/${image.id as string}/image`,
      width: 700,
      height: 400,
      alt: 'An orange',
      placeholder: image.placeholder,
      srcset: `/media/${image.id as string}/image?w=320 320w, /media/${image.id as string}/image?w=640 640w`,
    })

    it('is written by id and read as {id, url, width, height, alt, placeholder, srcset} in both versions and in fields', async () => {
      const made = await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Fruit', content: 'x', feature_image: image.id } })
      assert.equal(made.statusCode, 201, made.body)
      assert.deepEqual(json(made).feature_image, expected())
      const v2 = await t.request({ method: 'GET', url: `/v2/posts/${json(made).id as number}` })
      assert.deepEqual(json(v2).feature_image, expected())
      const list = await t.request({ method: 'GET', url: '/posts?fields=id,feature_image' })
      assert.deepEqual(json(list).find((p: { id: number }) => p.id === json(made).id).feature_image, expected())
      const none = await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Plain', content: 'x' } })
      assert.equal(json(none).feature_image, null)
    })

    it('takes back the object a read gives (GET-modify-PUT), and null', async () => {
      const made = json(await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Round trip', content: 'x', feature_image: image.id } }))
      const put = await t.request({ method: 'PUT', url: `/posts/${made.id as number}`, headers, payload: { ...made, title: 'Round trip, again' } })
      assert.equal(put.statusCode, 200, put.body)
      assert.deepEqual(json(put).feature_image, expected())
      const cleared = await t.request({ method: 'PATCH', url: `/posts/${made.id as number}`, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ feature_image: null }) })
      assert.equal(cleared.statusCode, 200, cleared.body)
      assert.equal(json(cleared).feature_image, null)
    })

    it('refuses an unknown id with 422 UNKNOWN_MEDIA', async () => {
      const res = await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Nothing', content: 'x', feature_image: 'AAAAAAAAAAAAAAAAAAAAAA' } })
      assert.equal(res.statusCode, 422)
      assert.deepEqual(json(res).errors.map((e: { field: string, code: string }) => [e.field, e.code]), [['feature_image', 'UNKNOWN_MEDIA']])
    })

    it('answers one problem per field: any text naming no media is UNKNOWN_MEDIA, a value of another type INVALID_TYPE alone', async () => {
      const codes = async (featureImage: unknown) => {
        const res = await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'One problem', content: 'x', feature_image: featureImage } })
        assert.equal(res.statusCode, 422, res.body)
        return json(res).errors.map((e: { field: string, code: string }) => [e.field, e.code])
      }
      for (const named of ['nope', '', 'x'.repeat(200), { id: 'not-a-media' }, { id: 'AAAAAAAAAAAAAAAAAAAAAA', url: 'ignored' }]) {
        assert.deepEqual(await codes(named), [['feature_image', 'UNKNOWN_MEDIA']], JSON.stringify(named))
      }
      for (const wrong of [42, true, [], ['AAAAAAAAAAAAAAAAAAAAAA']]) {
        assert.deepEqual(await codes(wrong), [['feature_image', 'INVALID_TYPE']], JSON.stringify(wrong))
      }
      assert.deepEqual(await codes('x'.repeat(201)), [['feature_image', 'TOO_LONG']])
      assert.deepEqual(await codes({ id: 5 }), [['feature_image/id', 'INVALID_TYPE']])
      assert.deepEqual(await codes({}), [['feature_image/id', 'REQUIRED']])
    })

    it('keeps its image from deletion: 409 MEDIA_IN_USE until the post lets it go', async () => {
      const bytes = await sharp({ create: { width: 50, height: 50, channels: 3, background: 'green' } }).png().toBuffer()
      const own = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: bytes }))
      const made = json(await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Green', content: 'x', feature_image: own.id } }))
      const refused = await t.request({ method: 'DELETE', url: `/media/${own.id as string}`, headers })
      assert.equal(refused.statusCode, 409)
      assert.equal(json(refused).code, 'MEDIA_IN_USE')
      await t.request({ method: 'PATCH', url: `/posts/${made.id as number}`, headers: { ...headers, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ feature_image: null }) })
      assert.equal((await t.request({ method: 'DELETE', url: `/media/${own.id as string}`, headers })).statusCode, 204)
    })

    it('is carried by the feeds: an Atom enclosure and JSON Feed image', async () => {
      await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'In the feed', content: 'x', feature_image: image.id } })
      const atom = await t.request({ method: 'GET', url: '/feed.atom' })
      assert.match(atom.body, new RegExp(`<link rel="enclosure" href="[^"]*/media/${image.id as string}/image"`))
      const feed = json(await t.request({ method: 'GET', url: '/feed.json' }))
      assert.match(feed.items[0].image, new RegExp(`/media/${image.id as string}/image$`))
    })
  })
}
