import assert from 'node:assert/strict'
import fs from 'node:fs'
import { after, describe, it } from 'node:test'
import { type Browser, chromium } from 'playwright-core'
import sharp from 'sharp'
import { buildTestApp, json, skipOutsideCI, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const CHROMIUM = '/usr/bin/chromium'
const skip = skipOutsideCI(fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (run sh scripts/install-browser.sh)`)

describe('a post\'s content_html in a browser', { skip }, () => {
  let t: TestApp
  let browser: Browser
  let origin: string
  let html: string
  before(async () => {
    t = await buildTestApp('sqlite')
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const address = t.app.server.address()
    assert.ok(address !== null && typeof address === 'object')
    origin = `http://127.0.0.1:${address.port}`
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    const headers = await t.auth('alice', ['posts:write'])
    const photo = await sharp({ create: { width: 1600, height: 1000, channels: 3, background: 'navy' } }).jpeg().toBuffer()
    const media = json(await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/jpeg' }, payload: photo }))
    const post = json(await t.request({ method: 'POST', url: '/posts', headers, payload: { title: 'Seen', content: `![A navy field](/media/${media.id as string}/file)` } }))
    html = post.content_html
  })
  after(async () => {
    await browser?.close()
  })

  for (const [viewport, width] of [[400, 640], [1200, 960]] as const) {
    it(`fetches the ${width}w variant in a ${viewport} px wide window, decoded to that width`, async () => {
      const page = await browser.newPage({ viewport: { width: viewport, height: 800 }, deviceScaleFactor: 1 })
      const images: string[] = []
      const bodies: Promise<Buffer>[] = []
      page.on('response', res => { if (res.request().resourceType() === 'image') { images.push(res.url()); bodies.push(res.body()) } })
      // The page is the post as a site would show it, on the service's origin (so its image URLs are the service's).
      await page.route(`${origin}/page`, async route => { await route.fulfill({ contentType: 'text/html', body: `<!doctype html><meta name="viewport" content="width=device-width"><body style="margin:0">${html}</body>` }) })
      await page.goto(`${origin}/page`, { waitUntil: 'networkidle' })
      const img = page.locator('img')
      await img.evaluate(async (el: { decode: () => Promise<void> }) => { await el.decode() })
      const shown = { src: await img.evaluate((el: { currentSrc: string }) => el.currentSrc) }
      assert.equal(images.length, 1, images.join(' '))
      assert.match(images[0]!, new RegExp(`/image\\?w=${width}$`))
      assert.equal(shown.src, images[0])
      // What arrived is that width: the browser decoded a variant made for it, not the original.
      const meta = await sharp(await bodies[0]!).metadata()
      assert.equal(meta.width, width)
      await page.close()
    })
  }
})
