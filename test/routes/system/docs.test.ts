import assert from 'node:assert/strict'
import fs from 'node:fs'
import { after, describe, it } from 'node:test'
import { type Browser, chromium } from 'playwright-core'
import { buildTestApp, type TestApp, underCI } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const CHROMIUM = '/usr/bin/chromium'

/** Under CI a missing browser is a failure; elsewhere the suite is skipped with the reason. */
function browserMissing (): string | false {
  if (fs.existsSync(CHROMIUM)) return false
  if (underCI()) throw new Error(`CI=true but ${CHROMIUM} is missing: run sh scripts/install-browser.sh`)
  const reason = `${CHROMIUM} is missing: the /docs browser test is skipped (run sh scripts/install-browser.sh, or set CI=true to make this a failure)`
  process.stderr.write(`# ${reason}\n`)
  return reason
}

const skip = browserMissing()

describe('GET /docs in a browser', { skip }, () => {
  let t: TestApp
  let browser: Browser
  let origin: string
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
  })
  after(async () => {
    await browser?.close()
  })

  it('renders every operation from local assets only, without errors', async () => {
    const page = await browser.newPage()
    const requested: string[] = []
    const failed: string[] = []
    const errors: string[] = []
    page.on('request', req => { requested.push(req.url()) })
    page.on('requestfailed', req => { failed.push(`${req.url()} ${req.failure()?.errorText ?? ''}`) })
    page.on('pageerror', err => { errors.push(err.message) })
    page.on('console', msg => { if (msg.type() === 'error') errors.push(msg.text()) })

    const res = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' })
    assert.equal(res?.status(), 200)
    // Swagger UI renders the operations once it has fetched and parsed the document.
    await page.locator('.opblock').first().waitFor({ state: 'visible' })
    const text = await page.locator('body').innerText()
    for (const expected of ['Blog Post Service', 'An HTTP/JSON API of /posts']) {
      assert.ok(text.includes(expected), `the page shows ${expected}`)
    }

    // With a hundred operations or more Swagger UI renders only those near the viewport: scroll
    // the page through and collect every operation it shows on the way.
    const shown = new Set<string>()
    for (let step = 0; step < 400; step++) {
      const seen = await page.locator('.opblock-summary').evaluateAll(nodes => nodes.map(n =>
        `${n.querySelector('.opblock-summary-method')?.textContent ?? ''} ${n.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''}`))
      for (const op of seen) shown.add(op)
      const atEnd = await page.evaluate(
        'window.scrollBy(0, window.innerHeight / 2), window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2') as boolean
      if (atEnd && step > 0) break
      await page.waitForTimeout(40)
    }
    const doc = await t.app.inject({ method: 'GET', url: '/docs/json' }).then(r => r.json() as { paths: Record<string, Record<string, unknown>> })
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).filter(m => ['get', 'put', 'post', 'patch', 'delete'].includes(m)).map(m => `${m.toUpperCase()} ${path}`))
    assert.ok(documented.length >= 100, `the document has its operations (${documented.length})`)
    const missing = documented.filter(op => !shown.has(op))
    assert.deepEqual(missing, [], 'the page shows every documented operation')
    for (const expected of ['GET /posts', 'GET /posts/{post_id}', 'DELETE /posts/{post_id}', 'PUT /posts/{post_id}', 'GET /healthz', 'GET /readyz']) {
      assert.ok(shown.has(expected), `the page shows ${expected}`)
    }

    assert.ok(requested.length > 3, `the page loaded its assets (${requested.join(', ')})`)
    assert.ok(requested.some(u => new URL(u).pathname === '/docs/json' || new URL(u).pathname === '/openapi.json'), 'the page fetched the document')
    const foreign = requested.filter(u => !/^(data|blob):/.test(u) && new URL(u).hostname !== '127.0.0.1')
    assert.deepEqual(foreign, [], 'no request leaves 127.0.0.1')
    assert.deepEqual(failed, [], 'every request succeeded')
    assert.deepEqual(errors, [], 'no script errors')
    await page.close()
  })

  it('shows the service\'s own name, mark and look, not the framework\'s top bar, and a real resource as the version example', async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' })
    await page.locator('.opblock').first().waitFor({ state: 'visible' })
    assert.equal(await page.title(), 'Blog Post Service · API reference')
    const banner = page.getByRole('banner').first()
    assert.equal((await banner.getByRole('link').first().innerText()).replace(/\s+/g, ' ').trim(), 'Blog Post Service API reference')
    assert.equal(await banner.locator('svg.mark').count(), 1, 'the service\'s mark')
    await banner.getByRole('link', { name: 'Editor' }).waitFor()
    assert.equal(await page.locator('.topbar').count(), 0, 'no Swagger UI top bar')
    assert.equal(await page.locator('img[alt="Swagger UI"], .topbar-wrapper .link svg').count(), 0, 'no framework logo')
    assert.equal(await page.locator('.download-url-input').count(), 0, 'no box for another document\'s URL')
    const text = await page.locator('body').innerText()
    assert.ok(text.includes('postId'), 'the version text\'s example is a resource the API serves')
    assert.ok(!text.includes('ticket'), 'and never a test fixture\'s')
    await page.close()
  })

  it('publishes the maximum page size in the rendered reference', async () => {
    const page = await browser.newPage()
    await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' })
    await page.locator('.opblock').first().waitFor({ state: 'visible' })
    assert.ok((await page.locator('body').innerText()).includes('maximum 100'), 'the description states the page-size limit')
    await page.close()
  })
})
