import assert from 'node:assert/strict'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { type Browser, chromium, type Page } from 'playwright-core'
import { CHROMIUM, LAUNCH_ARGS } from '../../admin/browser.ts'
import { buildTestApp, freePort, type TestApp, underCI } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

/** The browser half of WebAuthn the editor uses (@simplewebauthn/browser), as its own bundle. */
const WEBAUTHN_BROWSER = fs.readFileSync(path.join(path.dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '../dist/bundle/index.umd.min.js'), 'utf8')
const PASSWORD = 'correct horse battery staple'

function browserMissing (): string | false {
  if (fs.existsSync(CHROMIUM)) return false
  if (underCI()) throw new Error(`CI=true but ${CHROMIUM} is missing: run sh scripts/install-browser.sh`)
  process.stderr.write(`# ${CHROMIUM} is missing: the passkey ceremony is skipped\n`)
  return `${CHROMIUM} is missing`
}

/**
 * A real passkey ceremony: Chromium's virtual authenticator (CDP WebAuthn domain) answers the
 * service's options on a page of the service's own origin, `http://localhost:PORT` (the relying
 * party on loopback), and the service checks the answers with its WebAuthn library.
 */
describe('passkeys in a real browser', { skip: browserMissing() }, () => {
  let t: TestApp
  let browser: Browser
  let page: Page
  let origin: string
  before(async () => {
    const port = await freePort()
    origin = `http://localhost:${port}`
    t = await buildTestApp('sqlite', { RATE_LIMIT_MAX: '0', PORT: String(port), PUBLIC_BASE_URL: origin })
    await t.app.listen({ port, host: '127.0.0.1' })
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...LAUNCH_ARGS, '--host-resolver-rules=MAP localhost 127.0.0.1'] })
    page = await browser.newPage()
    const cdp = await page.context().newCDPSession(page)
    await cdp.send('WebAuthn.enable')
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    })
    const home = await page.goto(`${origin}/healthz`)
    assert.equal(home?.status(), 200)
    await page.evaluate(WEBAUTHN_BROWSER)
  })
  after(async () => {
    await browser?.close()
  })

  it('registers a passkey and signs in with it; the same answer twice is refused', async () => {
    const setup = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'Olive Owner', email: 'owner@example.com', password: PASSWORD } })
    assert.equal(setup.statusCode, 201, setup.body)
    const bearer = { authorization: `Bearer ${setup.json().access_token as string}` }

    const creation = await t.request({ method: 'POST', url: '/users/me/passkeys/options', headers: bearer })
    assert.equal(creation.statusCode, 200, creation.body)
    assert.equal(creation.json().rp.id, 'localhost')
    const attestation = await page.evaluate(`SimpleWebAuthnBrowser.startRegistration({ optionsJSON: ${creation.body} })`)
    const registered = await t.request({ method: 'POST', url: '/users/me/passkeys', headers: bearer, payload: { name: 'Virtual key', response: attestation } })
    assert.equal(registered.statusCode, 201, registered.body)
    assert.equal(registered.json().name, 'Virtual key')

    const request = await t.request({ method: 'POST', url: '/sessions/passkey/options' })
    assert.equal(request.statusCode, 200, request.body)
    const assertion = await page.evaluate(`SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: ${request.body} })`)
    const signedIn = await t.request({ method: 'POST', url: '/sessions/passkey', payload: { response: assertion } })
    assert.equal(signedIn.statusCode, 201, signedIn.body)
    assert.equal(signedIn.json().user.id, setup.json().user.id)
    assert.equal(signedIn.json().session.method, 'passkey')
    const me = await t.request({ method: 'GET', url: '/users/me', headers: { authorization: `Bearer ${signedIn.json().access_token as string}` } })
    assert.equal(me.json().email, 'owner@example.com')

    const replay = await t.request({ method: 'POST', url: '/sessions/passkey', payload: { response: assertion } })
    assert.equal(replay.statusCode, 401)
    assert.equal(replay.json().code, 'PASSKEY_REJECTED')
    const listed = await t.request({ method: 'GET', url: '/users/me/passkeys', headers: bearer })
    assert.equal(listed.json().length, 1)
    assert.notEqual(listed.json()[0].last_used_at, null)
  })
})
