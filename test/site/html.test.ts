import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import path from 'node:path'
import { HtmlValidate } from 'html-validate'
import { storeKinds } from '../helper.ts'
import { ROOT } from '../process-helper.ts'
import { addAuthor, addImage, buildTestSite, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

const validator = new HtmlValidate({ extends: ['html-validate:standard'] })

async function errorsOf (html: string): Promise<string[]> {
  const report = await validator.validateString(html)
  return report.results.flatMap(r => r.messages.filter(m => m.severity === 2).map(m => `${m.line}:${m.column} ${m.ruleId}: ${m.message}`))
}

for (const kind of await storeKinds()) {
  describe(`every page kind is valid HTML with the head it needs (${kind})`, () => {
    let s: TestSite
    let post: any
    let image: any
    before(async () => {
      s = await buildTestSite(kind)
      const admin = await s.t.auth('root', ['admin'])
      await addAuthor(s.t)
      image = await addImage(s.t, admin, 1600, 900, 'A wide picture')
      await s.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { title: 'Ann & Co', description: 'Notes "quoted"', navigation: [{ label: 'About', url: '/about' }] } })
      post = await publish(s.t, { title: 'Pictures <3', authors: ['ann'], tags: ['Photos'], feature_image: image.id, content: `Words.\n\n![inline](/media/${image.id as string}/image)\n\nMore words.`, meta_description: 'About pictures.' }, admin)
      for (let i = 0; i < 11; i++) await publish(s.t, { title: `Filler ${i}`, authors: ['ann'], tags: ['Photos'], feature_image: image.id }, admin)
      await s.t.searchIndexed()
    })

    const kinds = (): Record<string, string> => ({
      home: '/',
      'home, page 2': '/page/2',
      post: `/${post.slug as string}`,
      tag: '/tag/photos',
      author: '/author/ann',
      search: '/search?q=pictures',
      'empty search': '/search',
      'not found': '/nothing-here',
    })

    it('has no html-validate error (html-validate:standard) on any page kind', async () => {
      for (const [name, path] of Object.entries(kinds())) {
        const res = await s.get(path)
        assert.ok(res.status === 200 || (name === 'not found' && res.status === 404), `${name}: ${res.status}`)
        assert.deepEqual(await errorsOf(await res.text()), [], `${name} (${path})`)
      }
    })

    it('keeps every page valid with the example theme (examples/theme/)', async () => {
      const other = await buildTestSite(kind, { SITE_THEME_DIR: path.join(ROOT, 'examples/theme') })
      await publish(other.t, { title: 'In the example theme' })
      for (const p of ['/', '/in-the-example-theme', '/nothing']) {
        const res = await other.get(p)
        assert.deepEqual(await errorsOf(await res.text()), [], p)
      }
      assert.match(await (await other.get('/')).text(), /<article class="row">/)
    })

    it('gives a post its description, canonical URL, Open Graph, Twitter card, JSON-LD and images', async () => {
      const html = await (await s.get(`/${post.slug as string}`)).text()
      const base = s.url
      assert.match(html, /<title>Pictures &lt;3 – Ann &amp; Co<\/title>/)
      assert.match(html, /<meta name="description" content="About pictures.">/)
      assert.ok(html.includes(`<link rel="canonical" href="${base}/${post.slug as string}">`))
      assert.ok(html.includes(`<meta property="og:image" content="${base}/media/${image.id as string}/image?w=1280">`), 'og:image: the width nearest 1200')
      assert.match(html, /<meta name="twitter:card" content="summary_large_image">/)
      assert.match(html, /<meta property="og:site_name" content="Ann &amp; Co">/)
      const ld = JSON.parse(/<script type="application\/ld\+json">(.*?)<\/script>/s.exec(html)![1]!)
      assert.equal(ld['@type'], 'BlogPosting')
      assert.equal(ld.headline, 'Pictures <3')
      assert.deepEqual(ld.author, [{ '@type': 'Person', name: 'Ann Writer', url: `${base}/author/ann` }])
      assert.match(html, /<link rel="alternate" type="application\/atom\+xml"[^>]*href="[^"]*\/feed\.atom">/)
      const feature = /<figure class="feature"><img ([^>]*)>/.exec(html)![1]!
      for (const attr of ['width="1600"', 'height="900"', 'srcset="', 'sizes="', 'fetchpriority="high"', 'alt="A wide picture"']) assert.ok(feature.includes(attr), `${attr} in ${feature}`)
      assert.doesNotMatch(feature, /loading="lazy"/)
      assert.match(html, /<a href="\/author\/ann">Ann Writer<\/a>/)
    })

    it('loads the first image of a list eagerly and the rest lazily, and links a tag\'s own feeds', async () => {
      const html = await (await s.get('/tag/photos')).text()
      const imgs = [...html.matchAll(/<img ([^>]*)>/g)].map(m => m[1]!)
      assert.ok(imgs.length > 2)
      assert.match(imgs[0]!, /fetchpriority="high"/)
      for (const i of imgs.slice(1)) assert.match(i, /loading="lazy"/)
      assert.match(html, /href="[^"]*\/feed\.atom\?tag=Photos"/)
      assert.match(await (await s.get('/author/ann')).text(), /<link rel="alternate" type="application\/atom\+xml"[^>]*href="[^"]*\/feed\.atom">/)
      const home = await (await s.get('/')).text()
      assert.match(home, /"@type":"Blog"/)
      assert.match(home, /<meta property="og:type" content="website">/)
    })

    it('serves the images a page shows from its own origin', async () => {
      const res = await s.get(`/media/${image.id as string}/image?w=320`)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^image\//)
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable')
      assert.equal((await s.get('/media/AAAAAAAAAAAAAAAAAAAAAA/file')).status, 404)
    })
  })
}
