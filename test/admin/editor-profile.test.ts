import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { generate } from 'otplib'
import type { Page } from 'playwright-core'
import { cspViolations, editorMissing, type EditorWorld, seriousViolations, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

const PASSWORD = 'a long pass phrase for ada'

async function signInWithPassword (page: Page): Promise<void> {
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
}

describe('a person\'s Profile in the editor, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  before(async () => {
    // At http://localhost:PORT: the relying party of passkeys on loopback.
    w = await startEditorWorld('sqlite', {}, { localhost: true })
    const owner = (await w.t.request({ method: 'POST', url: '/setup', payload: { token: w.t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: 'a long pass phrase for olive' } })).json()
    const invite = (await w.t.request({ method: 'POST', url: '/invitations', headers: { authorization: `Bearer ${owner.access_token as string}` }, payload: { email: 'ada@example.com', role: 'author' } })).json()
    await w.t.request({ method: 'POST', url: '/invitations/accept', payload: { token: invite.token, name: 'Ada', password: PASSWORD } })
  })

  it('saves the profile, adds a passkey, turns on two-factor (then asked at sign-in), signs in with the passkey, and loads only when opened', async () => {
    const { page, context, errors } = await w.open()
    const cdp = await context.newCDPSession(page)
    await cdp.send('WebAuthn.enable')
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    })
    await page.goto('/admin')
    await signInWithPassword(page)
    await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    const scripts = async () => await page.evaluate('performance.getEntriesByType("resource").map(e => e.name).filter(n => n.endsWith(".js"))') as string[]
    const { lazy } = JSON.parse(fs.readFileSync(new URL('../../dist/admin/manifest.json', import.meta.url), 'utf8')) as { lazy: { file: string, screen: string }[] }
    const profileFile = lazy.find(l => l.screen === 'profile')!.file
    assert.ok(!(await scripts()).some(u => u.endsWith(profileFile)), 'the Profile screen\'s code is not loaded with the list')

    await page.getByRole('link', { name: 'Profile' }).click()
    await page.getByRole('heading', { level: 1, name: 'Profile' }).waitFor()
    await page.getByLabel('Name').fill('Ada Lovelace')
    await page.getByLabel('Bio').fill('Wrote the first program.')
    await page.getByLabel('Website').fill('https://ada.example')
    await page.getByRole('button', { name: 'Save profile' }).click()
    await page.getByRole('status').filter({ hasText: 'Profile saved' }).waitFor()
    assert.ok((await scripts()).some(u => u.endsWith(profileFile)), 'the Profile screen\'s code was loaded when it opened')
    const me = (await w.t.request({ method: 'GET', url: '/users?q=ada', headers: await w.t.auth('root', ['admin']) })).json()[0]
    assert.deepEqual([me.name, me.bio, me.website], ['Ada Lovelace', 'Wrote the first program.', 'https://ada.example'])
    await page.getByRole('button', { name: 'Sign out Chrome on Linux' }).waitFor()
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe on the Profile screen')
    await page.setViewportSize({ width: 375, height: 812 })
    assert.equal(await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, 'nothing scrolls sideways at 375 px')

    // A passkey, from Chromium's virtual authenticator.
    await page.getByRole('button', { name: 'Add a passkey' }).click()
    await page.getByRole('button', { name: 'Remove passkey Chrome on Linux' }).waitFor()

    // Two-factor codes: the secret as a QR code and as text, a first code, then the recovery codes.
    await page.getByRole('button', { name: 'Turn on two-factor' }).click()
    await page.getByRole('img', { name: 'QR code of the two-factor secret' }).waitFor()
    const secret = (await page.getByText(/^Secret:/).textContent())!.replace('Secret:', '').trim()
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe with the two-factor form')
    await page.getByLabel('Code', { exact: true }).fill(await generate({ secret }))
    await page.getByRole('button', { name: 'Confirm' }).click()
    const codes = page.getByRole('list', { name: 'Recovery codes' }).getByRole('listitem')
    await codes.first().waitFor()
    assert.equal(await codes.count(), 10)
    const recovery = (await codes.first().textContent())!.trim()
    assert.deepEqual(await cspViolations(page), [], 'no Content-Security-Policy violation on the Profile screen')

    // The next password sign-in asks for a code.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click()
    await signInWithPassword(page)
    await page.getByLabel('Code', { exact: true }).fill(recovery)
    await page.getByRole('button', { name: 'Verify' }).click()
    // Signed in again, the screen that was open comes back.
    await page.getByRole('heading', { level: 1, name: 'Profile' }).waitFor()

    // The passkey signs in without a password or a code.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click()
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
    await page.getByRole('heading', { level: 1, name: 'Profile' }).waitFor()
    await page.getByRole('button', { name: 'Remove passkey Chrome on Linux' }).click()
    await page.getByText('No passkey yet.').waitFor()
    assert.deepEqual(await cspViolations(page), [])
    assert.deepEqual(errors.filter(e => !/status of 401/.test(e)), [], 'no script errors (but the sign-in asking for a code)')
    await context.close()
  })
})
