import assert from 'node:assert/strict'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import { gzipSync } from 'node:zlib'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { buildSite, type Site } from '../../src/site/site.ts'
import { buildTestApp, freePort, type StoreKind, type TestApp, underCI } from '../helper.ts'
import { closeWhenDone, once } from '../support/hooks.ts'

export const CHROMIUM = '/usr/bin/chromium'
export const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** Under CI a missing browser (or a missing build of the editor) is a failure; elsewhere the suite is skipped with the reason. */
export function editorMissing (): string | false {
  const missing = !fs.existsSync(CHROMIUM)
    ? `${CHROMIUM} is missing (run sh scripts/install-browser.sh)`
    : !fs.existsSync(new URL('../../dist/admin/index.html', import.meta.url)) ? 'dist/admin is missing (run npm run build)' : null
  if (missing === null) return false
  if (underCI()) throw new Error(`CI=true but ${missing}`)
  process.stderr.write(`# the editor's browser tests are skipped: ${missing}\n`)
  return missing
}

/** A page's traffic and faults, recorded from its first request. */
export interface Watched {
  readonly page: Page
  readonly requests: string[]
  readonly errors: string[]
}

export interface EditorWorld {
  readonly t: TestApp
  readonly origin: string
  readonly browser: Browser
  /** With `site`: the reading site, on a listener of its own, and its origin (SITE_BASE_URL). */
  readonly site?: { readonly app: Site, readonly url: string }
  /** A context of its own (its own sessionStorage), with every request and script error recorded. */
  open (opts?: { width?: number, height?: number }): Promise<Watched & { context: BrowserContext }>
  close (): Promise<void>
}

/**
 * The service on a real socket (as the other browser tests start it) and Chromium. With
 * `localhost`, the page is at `http://localhost:PORT` (PUBLIC_BASE_URL too): WebAuthn refuses an IP
 * address as relying party, and the service makes `localhost` the one on loopback. With `site`, the
 * reading site too (src/site/site.ts, as `npm start` runs it), on a port of its own. It closes
 * itself when the test or suite that made it ends (test/support/hooks.ts); a script outside the
 * test runner passes `selfClosing: false` and closes it.
 */
export async function startEditorWorld (kind: StoreKind = 'sqlite', env: Record<string, string> = {}, opts: { localhost?: boolean, site?: boolean, selfClosing?: boolean } = {}): Promise<EditorWorld> {
  const port = opts.localhost === true ? await freePort() : 0
  const sitePort = opts.site === true ? await freePort() : 0
  const siteUrl = `http://127.0.0.1:${sitePort}`
  const t = await buildTestApp(kind, {
    RATE_LIMIT_MAX: '0',
    ...(port === 0 ? {} : { PORT: String(port), PUBLIC_BASE_URL: `http://localhost:${port}` }),
    ...(sitePort === 0 ? {} : { SITE_PORT: String(sitePort), SITE_BASE_URL: siteUrl, HOST: '127.0.0.1' }),
    ...env,
  }, { selfClosing: false })
  let site: Site | undefined
  try {
    await t.app.listen({ port, host: '127.0.0.1' })
    if (sitePort !== 0) {
      site = await buildSite(t.context, t.app)
      await site.app.listen({ port: sitePort, host: '127.0.0.1' })
    }
  } catch (err) {
    await site?.app.close()
    await t.close()
    throw err
  }
  const address = t.app.server.address()
  assert.ok(address !== null && typeof address === 'object')
  const origin = `http://${port === 0 ? '127.0.0.1' : 'localhost'}:${address.port}`
  let browser: Browser
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...LAUNCH_ARGS, ...(port === 0 ? [] : ['--host-resolver-rules=MAP localhost 127.0.0.1'])] })
  } catch (err) {
    await site?.app.close()
    await t.close()
    throw err
  }
  const world: EditorWorld = {
    t,
    origin,
    browser,
    ...(site === undefined ? {} : { site: { app: site, url: siteUrl } }),
    async open ({ width = 1280, height = 900 } = {}) {
      const context = await browser.newContext({ viewport: { width, height }, baseURL: origin })
      const page = await context.newPage()
      const requests: string[] = []
      const errors: string[] = []
      page.on('request', req => { requests.push(req.url()) })
      page.on('pageerror', err => { errors.push(err.message) })
      page.on('console', msg => { if (msg.type() === 'error') errors.push(msg.text()) })
      // Every refusal of the page's Content-Security-Policy, in the document or a shadow root, as the page saw it.
      await page.addInitScript(CSP_WATCH)
      return { context, page, requests, errors }
    },
    close: once(async () => {
      await browser.close()
      await site?.app.close()
      await t.close()
    }),
  }
  if (opts.selfClosing !== false) closeWhenDone(world.close)
  return world
}

/** Records each `securitypolicyviolation` (they are composed: a shadow root's reach the document) in `window.__csp`. */
const CSP_WATCH = 'window.__csp = []; document.addEventListener("securitypolicyviolation", e => { window.__csp.push([e.violatedDirective, e.blockedURI || e.sample, "at", e.sourceFile + ":" + e.lineNumber + ":" + e.columnNumber].join(" ")) }, true)'

/** The page's Content-Security-Policy violations since it loaded (axe's own, made while it audits, left out). */
export async function cspViolations (page: Page): Promise<string[]> {
  return await page.evaluate('window.__csp.slice()') as string[]
}

/** Waits until `check` holds (the page works on its own time), failing after `ms`. */
export async function eventually (check: () => Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

/** The sign-in screen's API key form, behind `Use an API key` (the person's sign-in comes first). */
export async function useKey (page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Use an API key' }).click()
}

/** Signs in through the form with an API key. */
/** Signs in at /admin with a person's email and password, and waits for the list of posts. */
export async function signInAs (page: Page, email: string, password: string): Promise<void> {
  await page.goto('/admin')
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password', { exact: true }).fill(password)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
}

export async function signIn (page: Page, token: string): Promise<void> {
  await page.goto('/admin')
  await useKey(page)
  await page.getByLabel('API key').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
}

/**
 * axe-core's audit of the page as it is: the serious and critical violations, described. axe itself
 * (put into the page by the test) sets inline styles while it checks, which the page's policy
 * refuses and the browser reports; those reports, made during the audit, are dropped from `errors`.
 */
export async function seriousViolations (page: Page, errors: string[] = []): Promise<string[]> {
  // Expressions, not functions: the tests are compiled without the DOM's types.
  if (await page.evaluate('typeof window.axe === "undefined"')) await page.evaluate(AXE_SOURCE)
  const before = errors.length
  const cspBefore = await page.evaluate('window.__csp?.length ?? 0') as number
  const result = await page.evaluate('axe.run(document)') as { violations: { id: string, impact: string | null, help: string, nodes: { target: unknown }[] }[] }
  const during = errors.splice(before)
  errors.push(...during.filter(e => !e.startsWith('Applying inline style violates')))
  await page.evaluate(`window.__csp?.splice(${cspBefore})`)
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.impact ?? ''} ${v.id}: ${v.help} (${v.nodes.map(n => JSON.stringify(n.target)).join(', ')})`)
}

/** The requests that left the service's origin (data: and blob: URLs stay in the page). */
export function foreign (requests: readonly string[], origin: string): string[] {
  return requests.filter(u => !/^(data|blob):/.test(u) && new URL(u).origin !== origin)
}

/** The gzipped size of each script and style sheet the page loaded, each compressed on its own. */
export async function gzippedAssets (page: Page, origin: string): Promise<Map<string, number>> {
  const urls = await page.evaluate('performance.getEntriesByType("resource").map(e => e.name).concat(location.href)') as string[]
  const sizes = new Map<string, number>()
  for (const url of new Set(urls)) {
    if (!/\.(js|css)(\?|$)/.test(url)) continue
    const res = await fetch(url.startsWith('http') ? url : `${origin}${url}`)
    sizes.set(new URL(url).pathname, gzipSync(Buffer.from(await res.arrayBuffer()), { level: 9 }).length)
  }
  return sizes
}
