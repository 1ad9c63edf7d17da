import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { type Browser, chromium } from 'playwright-core'
import { CHROMIUM, cspViolations, gzippedAssets, LAUNCH_ARGS, seriousViolations } from '../admin/browser.ts'
import { addAuthor, addImage, buildTestSite, chromiumMissing, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

const CSP_WATCH = 'window.__csp = []; document.addEventListener("securitypolicyviolation", e => { window.__csp.push(e.violatedDirective + " " + (e.blockedURI || e.sample)) }, true)'

describe('the site in a browser', { skip: chromiumMissing() }, () => {
  let s: TestSite
  let browser: Browser
  let slug: string
  before(async () => {
    s = await buildTestSite('sqlite')
    const admin = await s.t.auth('root', ['admin'])
    await addAuthor(s.t)
    const image = await addImage(s.t, admin, 1200, 600, 'A picture')
    await s.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': 'application/merge-patch+json' }, payload: { navigation: [{ label: 'About', url: '/about' }, { label: 'Archive', url: '/page/2' }] } })
    const long = `${'A long paragraph of words that goes on. '.repeat(40)}\n\n\`\`\`\nconst aVeryLongLineOfCodeThatWouldScrollSideways = ${'"x".repeat(10) + '.repeat(12)}"end"\n\`\`\`\n\n![A picture](/media/${image.id as string}/image)`
    slug = (await publish(s.t, { title: 'A post with a rather long title to see how it wraps on a phone', authors: ['ann'], tags: ['Photos', 'Long reads'], feature_image: image.id, content: long }, admin)).slug
    for (let i = 0; i < 11; i++) await publish(s.t, { title: `Filler ${i}`, authors: ['ann'], tags: ['Photos'] }, admin)
    await s.t.searchIndexed()
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  })
  after(async () => {
    await browser?.close()
  })

  it('has no serious or critical axe-core violation, sends no script, and scrolls nothing sideways at 320 px, on every page kind', async () => {
    const context = await browser.newContext({ viewport: { width: 320, height: 640 } })
    try {
      for (const path of ['/', '/page/2', `/${slug}`, '/tag/photos', '/author/ann', '/search?q=paragraph', '/nothing-here']) {
        const page = await context.newPage()
        const requests: string[] = []
        const errors: string[] = []
        page.on('request', req => { requests.push(req.url()) })
        page.on('pageerror', err => { errors.push(err.message) })
        await page.addInitScript(CSP_WATCH)
        await page.goto(`${s.url}${path}`, { waitUntil: 'load' })
        assert.deepEqual(await seriousViolations(page, errors), [], path)
        assert.deepEqual(await cspViolations(page), [], `${path}: CSP`)
        assert.deepEqual(errors, [], path)
        assert.deepEqual(requests.filter(u => u.endsWith('.js') || new URL(u).origin !== s.url), [], `${path}: a script or another origin`)
        const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth') as number
        assert.ok(overflow <= 0, `${path} scrolls ${overflow} px sideways at 320 px`)
        for (const [css, bytes] of await gzippedAssets(page, s.url)) assert.ok(bytes <= 20 * 1024, `${css}: ${bytes} bytes gzipped`)
        await page.close()
      }
    } finally {
      await context.close()
    }
  })

  it('is as readable in the dark: no contrast violation with prefers-color-scheme: dark', async () => {
    const context = await browser.newContext({ viewport: { width: 1024, height: 768 }, colorScheme: 'dark' })
    try {
      const page = await context.newPage()
      await page.addInitScript(CSP_WATCH)
      for (const path of ['/', `/${slug}`]) {
        await page.goto(`${s.url}${path}`, { waitUntil: 'load' })
        assert.deepEqual(await seriousViolations(page), [], path)
      }
    } finally {
      await context.close()
    }
  })
})
