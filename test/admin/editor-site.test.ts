import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import sharp from 'sharp'
import { cspViolations, editorMissing, type EditorWorld, eventually, seriousViolations, signInAs, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

const OWNER_PASSWORD = 'a long pass phrase for olive'
const EDITOR_PASSWORD = 'a long pass phrase for eddie'

describe('the Site screen in Chromium, with the reading site on its own listener', { skip: editorMissing() }, () => {
  let w: EditorWorld
  let siteUrl: string
  before(async () => {
    w = await startEditorWorld('sqlite', {}, { site: true })
    siteUrl = w.site!.url
    await w.t.request({ method: 'POST', url: '/setup', payload: { token: w.t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: OWNER_PASSWORD } })
    const admin = await w.t.auth('root', ['admin'])
    const invitation = (await w.t.request({ method: 'POST', url: '/invitations', headers: admin, payload: { email: 'eddie@example.com', role: 'editor' } })).json()
    const accepted = await w.t.request({ method: 'POST', url: '/invitations/accept', payload: { token: invitation.token, name: 'Eddie', password: EDITOR_PASSWORD } })
    assert.equal(accepted.statusCode, 201, accepted.body)
  })

  it('lets an admin change the title, accent, logo and navigation, which the site shows within a second; refuses a bad colour by its field and a stale save', async () => {
    const { page, context, errors } = await w.open()
    await signInAs(page, 'olive@example.com', OWNER_PASSWORD)
    await page.getByRole('link', { name: 'Site', exact: true }).click()
    await page.getByRole('heading', { level: 1, name: 'Site' }).waitFor()
    const title = page.getByLabel('Site title')
    await title.waitFor()
    assert.equal(await title.inputValue(), 'Blog')
    assert.equal(await page.getByLabel('Accent color').inputValue(), '#1a56db')
    assert.equal(await page.getByRole('link', { name: 'View site' }).getAttribute('href'), siteUrl)

    // A colour that is none: the service's 422 is shown under the field, which takes focus.
    const accent = page.getByLabel('Accent color')
    await accent.fill('teal')
    await page.getByRole('button', { name: 'Save site' }).click()
    await page.locator('.field-error').filter({ hasText: 'is not in the required format' }).waitFor()
    assert.equal(await page.locator('.field-error:not([hidden])').count(), 1, 'one field in error')
    assert.equal(await accent.getAttribute('aria-invalid'), 'true')
    assert.equal(await page.evaluate('document.activeElement?.id'), await accent.getAttribute('id'), 'the field in error has the focus')
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe on the Site screen with a field in error')

    await title.fill('Field Notes')
    await accent.fill('#0f766e')
    await page.getByRole('button', { name: 'Add link' }).click()
    const link = page.getByRole('group', { name: 'Link 1' })
    await link.getByLabel('Label').fill('About')
    await link.getByLabel('URL').fill('/about')
    await page.getByRole('button', { name: 'Add link' }).click()
    await page.getByRole('group', { name: 'Link 2' }).getByLabel('Label').fill('Elsewhere')
    await page.getByRole('button', { name: 'Remove link Elsewhere' }).click()
    assert.equal(await page.getByRole('group', { name: 'Link 2' }).count(), 0)
    const png = await sharp({ create: { width: 320, height: 80, channels: 3, background: '#0f766e' } }).png().toBuffer()
    await page.getByLabel('Logo').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: png })
    await page.getByRole('img', { name: 'The site\'s logo' }).waitFor()
    await page.getByRole('button', { name: 'Save site' }).click()
    await page.getByRole('status').filter({ hasText: 'Site saved' }).waitFor()
    const saved = Date.now()
    assert.equal(await accent.getAttribute('aria-invalid'), null, 'the error is gone once saved')

    // The site's home page, on its own listener, shows the change within a second.
    let home = ''
    await eventually(async () => {
      home = await (await fetch(`${siteUrl}/`)).text()
      return home.includes('Field Notes')
    }, 'the site shows the new title', 1000)
    process.stdout.write(`# the site showed the new settings after ${Date.now() - saved} ms\n`)
    assert.match(home, /<h1>Field Notes<\/h1>/)
    assert.match(home, /accent-0f766e/, 'the accent colour')
    assert.match(home, /<nav aria-label="Site">[\s\S]*<a href="\/about">About<\/a>/, 'the link added')
    assert.doesNotMatch(home, /Elsewhere/, 'the link removed')
    assert.match(home, /<a class="brand" href="\/"><img src="[^"]*\/media\/[^"]+" [^>]*alt="Field Notes">/, 'the logo')

    // View site opens it.
    const [opened] = await Promise.all([context.waitForEvent('page'), page.getByRole('link', { name: 'View site' }).click()])
    await opened.getByRole('heading', { level: 1, name: 'Field Notes' }).waitFor()
    await opened.close()

    assert.deepEqual(await seriousViolations(page, errors), [], 'axe on the Site screen')

    // Changed meanwhile by someone else: not overwritten, and said so.
    const admin = await w.t.auth('root', ['admin'])
    const now = await w.t.request({ method: 'GET', url: '/site' })
    await w.t.request({ method: 'PATCH', url: '/site', headers: { ...admin, 'content-type': 'application/merge-patch+json', 'if-match': now.headers.etag as string }, payload: JSON.stringify({ description: 'Theirs' }) })
    await page.getByLabel('Description').fill('Mine')
    await page.getByRole('button', { name: 'Save site' }).click()
    await page.getByRole('alert').filter({ hasText: 'changed the site\'s settings since you opened them' }).waitFor()
    assert.equal((await w.t.request({ method: 'GET', url: '/site' })).json().description, 'Theirs')
    // At 375 px wide, nothing scrolls sideways.
    await page.setViewportSize({ width: 375, height: 812 })
    assert.equal(await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, 'nothing scrolls sideways at 375 px')
    const save = await page.getByRole('button', { name: 'Save site' }).boundingBox()
    assert.ok(save !== null && save.x >= 0 && save.x + save.width <= 375.5, `Save site lies within the 375 px: ${JSON.stringify(save)}`)
    assert.deepEqual(await cspViolations(page), [], 'no Content-Security-Policy violation on the Site screen')
    // The browser logs the refusals (the bad colour's 422, the stale save's 412) itself.
    assert.deepEqual(errors.filter(e => !/status of (412|422)/.test(e)), [], 'no script errors')
    await context.close()
  })

  it('offers an editor no Site link, and at its address the settings to read only', async () => {
    const { page, context } = await w.open()
    await signInAs(page, 'eddie@example.com', EDITOR_PASSWORD)
    await page.getByRole('link', { name: 'Staff' }).waitFor()
    assert.equal(await page.getByRole('link', { name: 'Site', exact: true }).count(), 0)
    // At the screen's address, the settings are there to read, not to change.
    await page.goto('/admin#/site')
    await page.getByText('Only an admin changes the site\'s settings').waitFor()
    assert.ok(await page.getByRole('button', { name: 'Save site' }).isDisabled())
    assert.ok(await page.getByLabel('Site title').isDisabled())
    await context.close()
  })
})
