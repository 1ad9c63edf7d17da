import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as chromeLauncher from 'chrome-launcher'
import lighthouse from 'lighthouse'
import { CHROMIUM } from '../admin/browser.ts'
import { addAuthor, addImage, buildTestSite, chromiumMissing, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

/** What Chromium asks for when it loads an image. */
const BROWSER_IMAGES = 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8'

/** The categories Lighthouse scores, each to be at least 95 in its mobile profile. */
const CATEGORIES = ['performance', 'accessibility', 'best-practices', 'seo'] as const

/** Lighthouse's mobile scores on the home page and a post of a blog of 20 posts with feature images. */
describe('the reading site under Lighthouse', { skip: chromiumMissing() }, () => {
  let s: TestSite
  let slug: string
  before(async () => {
    s = await buildTestSite('sqlite')
    const admin = await s.t.auth('root', ['admin'])
    await addAuthor(s.t)
    await s.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { title: 'Field Notes', description: 'Notes from the field, weekly.', navigation: [{ label: 'About', url: '/about' }] } })
    const content = 'A first paragraph with a [link](https://example.com).\n\n## A heading\n\nMore words, and some `code`:\n\n```js\nconst answer = 42\n```\n\n> A quotation.\n'
    for (let i = 1; i <= 20; i++) {
      const image = await addImage(s.t, admin, 1600, 900, `Picture ${i}`)
      const post = await publish(s.t, { title: `A post about the field, part ${i}`, authors: ['ann'], tags: ['Field', `Part ${i % 3}`], feature_image: image.id, content }, admin)
      slug = post.slug
    }
  })

  it('scores at least 95 in each of Lighthouse\'s categories (mobile) on the home page and a post', async () => {
    const chrome = await chromeLauncher.launch({ chromePath: CHROMIUM, chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run'] })
    try {
      const found: string[] = []
      for (const path of ['/', `/${slug}`]) {
        // A blog's images are read before its first measured visitor comes: each variant is made
        // once, on its first request for its width and format, then kept (the media's own cache).
        const html = await (await s.get(path)).text()
        for (const [, src] of html.matchAll(/(\/media\/[^\s"]+\/image\?w=\d+)/g)) {
          assert.equal((await s.get(src!, { headers: { accept: BROWSER_IMAGES } })).status, 200, src)
        }
        const result = await lighthouse(`${s.url}${path}`, { port: chrome.port, logLevel: 'error', onlyCategories: [...CATEGORIES] })
        assert.ok(result !== undefined, `Lighthouse ran on ${path}`)
        const { categories, audits } = result.lhr
        const scores = CATEGORIES.map(c => Math.round((categories[c]?.score ?? 0) * 100))
        process.stderr.write(`# Lighthouse ${path}: ${CATEGORIES.map((c, i) => `${c} ${scores[i]!}`).join(', ')}\n`)
        CATEGORIES.forEach((c, i) => {
          if (scores[i]! >= 95) return
          const failing = (categories[c]?.auditRefs ?? []).filter(r => r.weight > 0 && (audits[r.id]?.score ?? 1) < 1).map(r => `${r.id} (${audits[r.id]?.displayValue ?? audits[r.id]?.score ?? ''})`)
          found.push(`${path} ${c} ${scores[i]!}: ${failing.join(', ')}`)
        })
      }
      assert.deepEqual(found, [])
    } finally {
      await chrome.kill()
    }
  })
})
